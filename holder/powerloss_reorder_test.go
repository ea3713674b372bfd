package holder

import (
	"fmt"
	"sync/atomic"
	"testing"

	"sexton/holder/fsys"
)

// reorderings are the outcomes of a cut that a test tries for n pending
// directory operations: none persisted, all, each one alone, and all but
// each one. (POSIX allows any subset; these are the ones that separate a
// step from the steps around it.)
func reorderings(n int) map[string]func(i int) bool {
	out := map[string]func(int) bool{
		"none": func(int) bool { return false },
		"all":  func(int) bool { return true },
	}
	for j := range n {
		out[fmt.Sprintf("only-%d", j)] = func(i int) bool { return i == j }
		out[fmt.Sprintf("all-but-%d", j)] = func(i int) bool { return i != j }
	}
	return out
}

// A GC round cut before each of its directory fsyncs, and after the pass
// returned, where any of the directory operations since the previous
// directory fsync may have persisted anyway (a filesystem orders nothing
// between directory fsyncs): in every such image the store opens, every
// live record reads back byte-identical, no deleted one is visible or
// accepts a late write, and fsck finds no problem. This is what makes the
// round's directory fsyncs ordering barriers: without one, an image
// exists in which a later step persisted and an earlier one did not.
func TestPowerLossReorderedGC(t *testing.T) {
	for _, scenario := range []string{"merge", "unlink"} {
		t.Run(scenario, func(t *testing.T) {
			for k := 1; ; k++ {
				if returned := reorderedGCCut(t, scenario, k); returned {
					return
				}
			}
		})
	}
}

// reorderedGCCut runs one round and cuts before its k-th directory fsync
// (after the pass when it has fewer), then checks every reordering of the
// pending operations. It reports whether the pass had returned.
func reorderedGCCut(t *testing.T, scenario string, k int) bool {
	t.Helper()
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	ff := fsys.NewFaulty(pl)
	f := newGCFixtureAt(t, dir, StoreOptions{FS: ff})
	gcCrashScenarios[scenario](f)
	var syncs atomic.Int64
	ff.Inject(fsys.Rule{Op: fsys.OpSyncDir, Hook: func(string) {
		if int(syncs.Add(1)) == k {
			pl.Cut()
		}
	}})
	newGCWorker(f.s, testGCOptions(), nil).pass()
	returned := int(syncs.Load()) < k
	name := fmt.Sprintf("before-dir-fsync-%d", k)
	if returned {
		name = "after-return"
		pl.Cut()
	}
	_ = f.s.Close()
	pending := pl.Pending()
	for outcome, keep := range reorderings(len(pending)) {
		t.Run(name+"/"+outcome, func(t *testing.T) {
			dst := t.TempDir()
			if err := pl.RestoreTo(dst, keep); err != nil {
				t.Fatal(err)
			}
			var kept []string
			for i, op := range pending {
				if keep(i) {
					kept = append(kept, op)
				}
			}
			t.Logf("pending %q; persisted %q", pending, kept)
			if rep, err := Inspect(dst); err != nil || len(rep.Problems) > 0 {
				t.Fatalf("persisted %q of %q: fsck: %v %v", kept, pending, err, rep.Problems)
			}
			g := &gcFixture{t: t, dir: dst, incs: f.incs, vals: f.vals, dead: f.dead}
			g.s = openT(t, dst, StoreOptions{BucketKeysLimit: 4})
			defer g.s.Close()
			g.check()
		})
	}
	f.s = openT(t, t.TempDir(), StoreOptions{}) // the fixture's cleanup closes it
	return returned
}
