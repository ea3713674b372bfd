package check

import (
	"bufio"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sexton/deploy/check/internal/sextonbin"
)

// TestFirstLogLineNamesTheBuild: a master's and a holder's first log line
// says which build runs (version, commit, Go release), so a log read later
// says what produced it.
func TestFirstLogLineNamesTheBuild(t *testing.T) {
	bin := sextonbin.Path(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String() // a master address nothing answers on
	ln.Close()
	dir := t.TempDir()
	for what, args := range map[string][]string{
		"master": {"master", "--id", "m1", "--data-dir", filepath.Join(dir, "m1"), "--raft-addr", "127.0.0.1:0",
			"--rpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--bootstrap"},
		"holder": {"holder", "--masters", dead, "--dir", filepath.Join(dir, "h1"), "--rpc-addr", "127.0.0.1:0",
			"--http-addr", "127.0.0.1:0", "--client-id", "h1"},
	} {
		cmd := exec.Command(bin, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		first, err := bufio.NewReader(stderr).ReadString('\n')
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			t.Fatalf("%s: no first log line: %v", what, err)
		}
		for _, want := range []string{"sexton " + what + " starting", "version=", "commit=", "go=" + runtime.Version()} {
			if !strings.Contains(first, want) {
				t.Errorf("%s's first log line %q lacks %q", what, first, want)
			}
		}
	}
}
