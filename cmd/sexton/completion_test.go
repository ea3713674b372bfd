package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionScripts generates both scripts, checks their syntax with
// bash -n (and zsh -n where zsh is installed), and runs the bash one on
// command lines to see what it completes.
func TestCompletionScripts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	scripts := map[string]string{}
	for _, shell := range []string{"bash", "zsh"} {
		out, err := captureStdout(t, func() error { return run([]string{"completion", shell}) })
		if err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		scripts[shell] = filepath.Join(dir, "sexton."+shell)
		if err := os.WriteFile(scripts[shell], out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("bash", "-n", scripts["bash"]).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("zsh"); err == nil {
		if out, err := exec.Command("zsh", "-n", scripts["zsh"]).CombinedOutput(); err != nil {
			t.Fatalf("zsh -n: %v\n%s", err, out)
		}
	} else {
		t.Log("zsh is not installed: zsh -n skipped")
	}

	// Each case: the words typed (the last is being completed) and words
	// the completion must offer, or must not.
	for _, tc := range []struct {
		line    string
		want    []string
		notWant []string
	}{
		{line: "sexton oper", want: []string{"operator"}},
		{line: "sexton ", want: []string{"put", "rm", "operator", "version", "completion"}},
		{line: "sexton operator sn", want: []string{"snapshot"}},
		{line: "sexton operator snapshot ", want: []string{"save", "restore", "inspect"}},
		{line: "sexton operator raft ", want: []string{"list-peers", "transfer-leader"}, notWant: []string{"snapshot"}},
		{line: "sexton rm --wa", want: []string{"--wait"}},
		{line: "sexton rm a/1 --", want: []string{"--batch", "--json", "--masters", "--help"}, notWant: []string{"--replicas"}},
		{line: "sexton --masters 127.0.0.1:7101 put k --", want: []string{"--replicas", "--if-absent"}},
		{line: "sexton operator snapshot save --", want: []string{"--masters"}, notWant: []string{"--json"}},
		{line: "sexton master --", want: []string{"--data-dir", "--peers"}},
		{line: "sexton completion ", want: []string{"bash", "zsh"}},
	} {
		words := strings.Split(tc.line, " ")
		script := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _sexton; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command("bash", append([]string{"-c", script, "bash", scripts["bash"]}, words...)...).CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.line, err, out)
			continue
		}
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if !containsWord(got, w) {
				t.Errorf("%q completes to %q, want %s among them", tc.line, got, w)
			}
		}
		for _, w := range tc.notWant {
			if containsWord(got, w) {
				t.Errorf("%q completes to %q, want no %s", tc.line, got, w)
			}
		}
	}
}

func containsWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}
