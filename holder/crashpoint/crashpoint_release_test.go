//go:build !testhooks

package crashpoint

import (
	"os"
	"os/exec"
	"testing"
)

var releaseTestPoint = New("crashpoint-release-test.point")

// TestReleaseBuildIgnoresCrashAt re-executes the test binary, built
// without the testhooks tag, with a point armed: the child must pass it
// and exit normally, and list no crash points.
func TestReleaseBuildIgnoresCrashAt(t *testing.T) {
	if os.Getenv("CRASHPOINT_TEST_CHILD") == "1" {
		releaseTestPoint.Hit()
		os.Stdout.WriteString("passed\n")
		os.Exit(0)
	}
	if Enabled {
		t.Fatal("Enabled without the testhooks build tag")
	}
	if n := Names(); len(n) != 0 {
		t.Fatalf("release build registers crash points %v", n)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReleaseBuildIgnoresCrashAt$")
	cmd.Env = append(os.Environ(), "CRASHPOINT_TEST_CHILD=1", EnvVar+"="+releaseTestPoint.Name())
	out, err := cmd.Output()
	if err != nil || string(out) != "passed\n" {
		t.Fatalf("child with %s=%s: %v, output %q; want a normal exit past the point", EnvVar, releaseTestPoint.Name(), err, out)
	}
}

// A release build never runs a hook: Hit compiles to nothing.
func TestReleaseBuildIgnoresSetHook(t *testing.T) {
	called := false
	SetHook(func(string) { called = true })
	defer SetHook(nil)
	releaseTestPoint.Hit()
	if called {
		t.Fatal("a release build ran the crash point hook")
	}
}
