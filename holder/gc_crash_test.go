//go:build testhooks

package holder

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"sexton/holder/crashpoint"
)

func TestGCCrashPointsAreRegistered(t *testing.T) {
	names := crashpoint.Names()
	for _, n := range GCCrashPoints {
		if !slices.Contains(names, n) {
			t.Errorf("%s is not registered", n)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "gc.") && !slices.Contains(GCCrashPoints, n) {
			t.Errorf("%s is registered but not in GCCrashPoints", n)
		}
	}
}

// TestGCCrashPoints kills a holder process at every GC crash point during
// a real round, reopens the directory, and checks: every live object
// reads back byte-identical, no deleted object is visible (or answers
// Removed to a replayed task), the directory inspects clean, and the next
// passes reclaim every dead byte.
func TestGCCrashPoints(t *testing.T) {
	for _, scenario := range []string{"merge", "unlink"} {
		for _, point := range GCCrashPoints {
			t.Run(scenario+"/"+point, func(t *testing.T) {
				f := newGCFixture(t, StoreOptions{})
				gcCrashScenarios[scenario](f)
				if err := f.s.Close(); err != nil {
					t.Fatal(err)
				}
				out, ws := runChildProcess(t, roleGC, f.dir, point)
				onPath := scenario == "merge" || strings.HasPrefix(point, "gc.floor.") ||
					slices.Index(GCCrashPoints, point) >= slices.Index(GCCrashPoints, "gc.after-commit-tmp")
				if onPath {
					wantKilled(t, point, out, ws)
				} else if ws.ExitStatus() != 0 {
					t.Fatalf("child: %v %q", ws, out)
				}
				f.reopen(StoreOptions{})
				f.check()
				if rep, err := Inspect(f.dir); err == nil && len(rep.Problems) > 0 {
					t.Fatalf("inspect after recovery: %v", rep.Problems)
				}
				newGCWorker(f.s, testGCOptions(), nil).pass()
				if u := f.s.Usage(); u.DeadBytes != 0 || f.s.GCStats().CleanupPending {
					t.Fatalf("after %s the next pass left %+v, %+v", point, u, f.s.GCStats())
				}
				if _, err := os.Stat(f.s.path(GCIntentFileName)); !errors.Is(err, os.ErrNotExist) {
					t.Fatal("intent left after the next pass")
				}
				f.check()
				f.reopen(StoreOptions{})
				f.check()
				rep, err := Inspect(f.dir)
				if err != nil || len(rep.Problems) > 0 || len(rep.OrphanBuckets)+len(rep.StaleMetas)+len(rep.TmpFiles) > 0 || rep.DeadBytes != 0 {
					t.Fatalf("fsck after reclaim: %v %+v", err, rep)
				}
			})
		}
	}
	t.Run("no crash", func(t *testing.T) {
		f := newGCFixture(t, StoreOptions{})
		gcCrashScenarios["merge"](f)
		f.s.Close()
		out, ws := runChildProcess(t, roleGC, f.dir, "")
		if ws.ExitStatus() != 0 || !strings.Contains(out, "Rounds:1") {
			t.Fatalf("status %v output %q", ws, out)
		}
		f.reopen(StoreOptions{})
		f.check()
	})
}
