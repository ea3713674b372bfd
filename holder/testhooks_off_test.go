//go:build !testhooks

package holder

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"sexton/holder/crashpoint"
)

// TestReleaseBuildIgnoresCrashPoints runs every crash point's path in a
// child built without the testhooks tag, with SEXTON_CRASH_AT naming that
// point: the child must finish its put, tombstone or GC round and exit
// normally, as a release holder given the variable does.
func TestReleaseBuildIgnoresCrashPoints(t *testing.T) {
	if crashpoint.Enabled || len(crashpoint.Names()) != 0 {
		t.Fatalf("crash points live without the testhooks tag: %v", crashpoint.Names())
	}
	if n := unsafe.Sizeof(testHooks{}); n != 0 {
		t.Fatalf("the store carries %d bytes of test hooks", n)
	}
	finished := func(t *testing.T, point, role, dir, want string) {
		t.Helper()
		out, ws := runChildProcess(t, role, dir, point)
		if !ws.Exited() || ws.ExitStatus() != 0 || !strings.Contains(out, want) {
			t.Fatalf("%s with %s=%s: status %v, output %q; want a normal exit with %q", role, crashpoint.EnvVar, point, ws, out, want)
		}
	}
	for _, point := range slices.Concat(PutCrashPoints, PutNewBucketCrashPoints) {
		finished(t, point, rolePut, t.TempDir(), "ACK")
	}
	for _, point := range TombstoneCrashPoints {
		dir := t.TempDir()
		finished(t, "", rolePut, dir, "ACK")
		finished(t, point, roleTombstone, dir, "results: [Removed]")
	}
	for _, point := range FloorCrashPoints {
		finished(t, point, roleAbsent, t.TempDir(), "results:")
	}
	for _, point := range GCCrashPoints {
		f := newGCFixture(t, StoreOptions{})
		gcCrashScenarios["merge"](f)
		if err := f.s.Close(); err != nil {
			t.Fatal(err)
		}
		finished(t, point, roleGC, f.dir, "Rounds:1")
		f.reopen(StoreOptions{})
		f.check()
	}
}
