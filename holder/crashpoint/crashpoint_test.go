//go:build testhooks

package crashpoint

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

var (
	testFirst  = New("crashpoint-test.first")
	testSecond = New("crashpoint-test.second")
)

func TestNamesAreSortedAndComplete(t *testing.T) {
	names := Names()
	seen := map[string]bool{}
	for i, n := range names {
		seen[n] = true
		if i > 0 && names[i-1] >= n {
			t.Fatalf("names not sorted: %q before %q", names[i-1], n)
		}
	}
	if !seen[testFirst.Name()] || !seen[testSecond.Name()] {
		t.Fatalf("registered names missing from %v", names)
	}
}

func TestDuplicateNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("second registration of a name did not panic")
		}
	}()
	New("crashpoint-test.first")
}

// TestHitKillsOnlyAtArmedPoint re-executes the test binary with the second
// point armed: the child passes the first point, marks it on stdout, and
// must die by SIGKILL at the second without printing the final marker.
func TestHitKillsOnlyAtArmedPoint(t *testing.T) {
	if os.Getenv("CRASHPOINT_TEST_CHILD") == "1" {
		testFirst.Hit()
		os.Stdout.WriteString("passed-first\n")
		testSecond.Hit()
		os.Stdout.WriteString("passed-second\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHitKillsOnlyAtArmedPoint$")
	cmd.Env = append(os.Environ(), "CRASHPOINT_TEST_CHILD=1", EnvVar+"=crashpoint-test.second")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child did not fail: %v, out %q", err, out)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child status %v, want killed by SIGKILL", ws)
	}
	if string(out) != "passed-first\n" {
		t.Fatalf("child output %q, want only the first marker", out)
	}
}

func BenchmarkHitUnarmed(b *testing.B) {
	for i := 0; i < b.N; i++ {
		testFirst.Hit()
	}
}

// SetHook sees every hit point by name, in the process, without killing
// it (no point is armed here); nil removes the hook.
func TestSetHookSeesEveryHit(t *testing.T) {
	var seen []string
	SetHook(func(name string) { seen = append(seen, name) })
	testFirst.Hit()
	testSecond.Hit()
	SetHook(nil)
	testFirst.Hit()
	if len(seen) != 2 || seen[0] != testFirst.Name() || seen[1] != testSecond.Name() {
		t.Fatalf("hook saw %q", seen)
	}
}
