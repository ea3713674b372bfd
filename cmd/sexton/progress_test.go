package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/internal/progress"
)

// TestProgressGoesToStderrOnly: snapshot save, restore and fsck report
// progress (a bar on a terminal, plain lines otherwise) on the progress
// writer, and stdout keeps only the verb's own output: under --json,
// exactly one JSON value.
func TestProgressGoesToStderrOnly(t *testing.T) {
	_, m := devCluster(t)
	dir := t.TempDir()
	value := valueFile(t, bytes.Repeat([]byte("x"), 4096))
	if _, err := captureStdout(t, func() error { return run(append([]string{"put", "k", value}, m...)) }); err != nil {
		t.Fatal(err)
	}
	old := progressTo
	defer func() { progressTo = old }()

	for _, terminal := range []bool{false, true} {
		var prog bytes.Buffer
		progressTo = progress.Sink{W: &prog, Terminal: terminal}
		snap := filepath.Join(dir, "snap-"+map[bool]string{false: "plain", true: "tty"}[terminal])

		out, err := captureStdout(t, func() error { return run(append([]string{"operator", "snapshot", "save", snap}, m...)) })
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(out), "\n") != 1 || !strings.HasPrefix(string(out), "saved snapshot to ") {
			t.Errorf("terminal %v: save printed on stdout %q, want its one result line", terminal, out)
		}
		out, err = captureStdout(t, func() error { return run(append([]string{"operator", "snapshot", "restore", snap}, m...)) })
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(out), "\n") != 1 || !strings.HasPrefix(string(out), "restored ") {
			t.Errorf("terminal %v: restore printed on stdout %q, want its one result line", terminal, out)
		}
		// Restore installs new state; fsck needs the holder remounted.
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, err = captureStdout(t, func() error { return run(append([]string{"operator", "fsck", "--json"}, m...)) })
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("fsck after restore: %v\n%s", err, out)
		}
		assertContract(t, "fsck --json", out)

		p := prog.String()
		for _, what := range []string{"snapshot save " + snap, "snapshot restore " + snap, "fsck"} {
			if !strings.Contains(p, what) {
				t.Errorf("terminal %v: no progress for %q in %q", terminal, what, p)
			}
		}
		if terminal && !strings.Contains(p, "|") && !strings.Contains(p, "█") {
			t.Errorf("terminal: no bar in %q", p)
		}
		if !terminal && (strings.Contains(p, "\r") || !strings.Contains(p, "fsck: done, 1 holders")) {
			t.Errorf("plain: want lines, no carriage returns, and fsck's last line: %q", p)
		}
		t.Logf("terminal %v progress:\n%s", terminal, p)
	}
}
