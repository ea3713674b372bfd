package holder

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
)

// reorderings are the outcomes of a cut that a test tries for n pending
// directory operations: none persisted, all, each one alone, and all but
// each contiguous run of them. (POSIX allows any subset; these are the
// ones that separate a step, or a group of steps, from the steps around
// it.)
func reorderings(n int) map[string]func(i int) bool {
	out := map[string]func(int) bool{
		"none": func(int) bool { return false },
		"all":  func(int) bool { return true },
	}
	for j := range n {
		out[fmt.Sprintf("only-%d", j)] = func(i int) bool { return i == j }
		for k := j; k < n; k++ {
			out[fmt.Sprintf("all-but-%d-%d", j, k)] = func(i int) bool { return i < j || i > k }
		}
	}
	return out
}

// A GC round cut before each of its directory fsyncs, and after the pass
// returned, where any of the directory operations since the previous
// directory fsync may have persisted anyway (a filesystem orders nothing
// between directory fsyncs): in every such image the store opens, every
// live record reads back byte-identical, no deleted one is visible or
// accepts a late write, fsck finds no problem, and no record is there
// twice (a round's sources and its target are never both in force: the
// intent on disk always says which one is). This is what makes the
// round's directory fsyncs ordering barriers: without one, an image
// exists in which a later step persisted and an earlier one did not.
func TestPowerLossReorderedGC(t *testing.T) {
	for _, scenario := range []string{"merge", "unlink"} {
		t.Run(scenario, func(t *testing.T) {
			for k := 1; ; k++ {
				if returned := reorderedGCCut(t, scenario, 0, k); returned {
					return
				}
			}
		})
	}
}

// The same with the k-th directory fsync of a merge round failing (the
// round aborts, or, for COMMITTED's, carries on and fsyncs again before
// any unlink), cut before the last directory fsync of the pass and after
// it returned.
func TestPowerLossReorderedGCFailedDirFsync(t *testing.T) {
	for k := 1; ; k++ {
		n := countPassDirSyncs(t, "merge", k)
		if n < k {
			return
		}
		t.Run(fmt.Sprintf("failed-%d", k), func(t *testing.T) {
			if n > k {
				reorderedGCCut(t, "merge", k, n)
			}
			reorderedGCCut(t, "merge", k, n+1)
		})
	}
}

// dirSyncHook runs before every directory fsync, numbered from 1.
type dirSyncHook struct {
	fsys.FS
	n      atomic.Int64
	before func(n int) error
}

func (d *dirSyncHook) SyncDir(name string) error {
	if err := d.before(int(d.n.Add(1))); err != nil {
		return err
	}
	return d.FS.SyncDir(name)
}

// countPassDirSyncs is how many directory fsyncs a pass over scenario
// issues when the fail-th fails.
func countPassDirSyncs(t *testing.T, scenario string, fail int) int {
	t.Helper()
	dir := t.TempDir()
	hook := &dirSyncHook{FS: fsys.OS{}, before: func(int) error { return nil }}
	f := newGCFixtureAt(t, dir, StoreOptions{FS: hook})
	gcCrashScenarios[scenario](f)
	hook.n.Store(0)
	hook.before = func(n int) error {
		if n == fail {
			return syscall.EIO
		}
		return nil
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	return int(hook.n.Load())
}

// reorderedGCCut runs one pass over scenario in which the fail-th
// directory fsync fails (0: none), cuts before its cut-th (after the pass
// when it has fewer), then checks every reordering of the pending
// operations. It reports whether the pass had returned.
func reorderedGCCut(t *testing.T, scenario string, fail, cut int) bool {
	t.Helper()
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	hook := &dirSyncHook{FS: pl, before: func(int) error { return nil }}
	f := newGCFixtureAt(t, dir, StoreOptions{FS: hook})
	gcCrashScenarios[scenario](f)
	hook.n.Store(0)
	hook.before = func(n int) error {
		if n == cut {
			pl.Cut()
		}
		if n == fail {
			return syscall.EIO
		}
		return nil
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	returned := int(hook.n.Load()) < cut
	name := fmt.Sprintf("before-dir-fsync-%d", cut)
	if returned {
		name = "after-return"
		pl.Cut()
	}
	_ = f.s.Close()
	t.Run(name, func(t *testing.T) {
		checkReorderings(t, pl, func(t *testing.T, dst string, kept, pending []string) {
			t.Logf("pending %q; persisted %q", pending, kept)
			if rep, err := Inspect(dst); err != nil || len(rep.Problems) > 0 {
				t.Fatalf("persisted %q of %q: fsck: %v %v", kept, pending, err, rep.Problems)
			}
			g := &gcFixture{t: t, dir: dst, incs: f.incs, vals: f.vals, dead: f.dead}
			g.s = openT(t, dst, StoreOptions{BucketKeysLimit: 4})
			defer g.s.Close()
			wantNoDuplicates(t, g.s, kept, pending)
			g.check()
		})
	})
	f.s = openT(t, t.TempDir(), StoreOptions{}) // the fixture's cleanup closes it
	return returned
}

// wantNoDuplicates fails when the reopened store found a record in two
// buckets: both sides of a GC round in force at once.
func wantNoDuplicates(t *testing.T, s *Store, kept, pending []string) {
	t.Helper()
	if n := s.OpenReport().ShadowedRecords; n > 0 {
		t.Fatalf("persisted %q of %q: %d records are there twice (a round's sources and its target both in force)", kept, pending, n)
	}
}

// A store reopened after a cut in the middle of a GC round finishes the
// round in its recovery (drops one side, fsyncs the directory, removes the
// intent); a second cut right after that open, with any of the recovery's
// directory operations persisted, still finds one side in force.
func TestPowerLossReorderedGCRecovery(t *testing.T) {
	n := countPassDirSyncs(t, "merge", 0)
	for cut := 1; cut <= n; cut++ {
		for _, first := range []string{"none", "all"} {
			t.Run(fmt.Sprintf("before-dir-fsync-%d/%s", cut, first), func(t *testing.T) {
				dir := t.TempDir()
				pl := newPowerLoss(t, dir)
				hook := &dirSyncHook{FS: pl, before: func(int) error { return nil }}
				f := newGCFixtureAt(t, dir, StoreOptions{FS: hook})
				gcCrashScenarios["merge"](f)
				hook.n.Store(0)
				hook.before = func(n int) error {
					if n == cut {
						pl.Cut()
					}
					return nil
				}
				newGCWorker(f.s, testGCOptions(), nil).pass()
				_ = f.s.Close()
				if err := pl.RestoreKeeping(func(int) bool { return first == "all" }); err != nil {
					t.Fatal(err)
				}
				if !f.exists(GCIntentFileName) {
					f.s = openT(t, t.TempDir(), StoreOptions{})
					return // no recovery to run
				}
				hook.before = func(int) error { return nil }
				f.s = openT(t, dir, StoreOptions{FS: hook, BucketKeysLimit: 4})
				if f.s.OpenReport().GCRecovery == "" {
					t.Fatal("the reopened store ran no GC recovery")
				}
				pl.Cut()
				_ = f.s.Close()
				checkReorderings(t, pl, func(t *testing.T, dst string, kept, pending []string) {
					g := &gcFixture{t: t, dir: dst, incs: f.incs, vals: f.vals, dead: f.dead}
					g.s = openT(t, dst, StoreOptions{BucketKeysLimit: 4})
					defer g.s.Close()
					wantNoDuplicates(t, g.s, kept, pending)
					g.check()
				})
				f.s = openT(t, t.TempDir(), StoreOptions{})
			})
		}
	}
}

// A put whose bucket file alone persisted leaves an orphan that the next
// open removes; after a clean restart a put into a new bucket of the same
// id, cut before its directory fsync, must never find its metadata beside
// the old orphan's bytes, whichever of the directory operations since the
// last directory fsync persisted (the orphan's removal among them, unless
// the open fsynced the directory after it).
func TestPowerLossReorderedPutAfterOrphan(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	var armed atomic.Bool // cut before the next directory fsync
	hook := &dirSyncHook{FS: pl, before: func(int) error {
		if armed.Load() {
			pl.Cut()
		}
		return nil
	}}
	s := openT(t, dir, StoreOptions{FS: hook, BucketKeysLimit: 1})
	armed.Store(true)
	orphan := valueOf("orphan", 9000)
	if err := s.Put("x", "t", incN(1), orphan); err == nil {
		t.Fatal("the first put was acknowledged through a cut")
	}
	_ = s.Close()
	pending := pl.Pending()
	created := slices.IndexFunc(pending, func(op string) bool { return strings.HasSuffix(op, bucketSuffix) })
	if created < 0 {
		t.Fatalf("no bucket create pending: %q", pending)
	}
	if err := pl.RestoreKeeping(func(i int) bool { return i == created }); err != nil {
		t.Fatal(err)
	}
	armed.Store(false)
	s = openT(t, dir, StoreOptions{FS: hook, BucketKeysLimit: 1})
	if len(s.OpenReport().RemovedOrphanBuckets) != 1 {
		t.Fatalf("no orphan bucket removed at open: %+v", s.OpenReport())
	}
	// A clean stop and a restart with no cut between: the next bucket
	// takes the orphan's id again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{FS: hook, BucketKeysLimit: 1})
	armed.Store(true)
	fresh := valueOf("fresh", 5000)
	if err := s.Put("y", "t", incN(2), fresh); err == nil {
		t.Fatal("the second put was acknowledged through a cut")
	}
	_ = s.Close()
	checkReorderings(t, pl, func(t *testing.T, dst string, kept, pending []string) {
		if rep, err := Inspect(dst); err != nil || len(rep.Problems) > 0 {
			t.Fatalf("persisted %q of %q: fsck: %v %v", kept, pending, err, rep.Problems)
		}
		s := openT(t, dst, StoreOptions{BucketKeysLimit: 1})
		defer s.Close()
		for k, v := range map[string][]byte{"x": orphan, "y": fresh} {
			inc := incN(1)
			if k == "y" {
				inc = incN(2)
			}
			got, err := s.Get(k, inc)
			if err == nil && string(got) != string(v) || err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("persisted %q of %q: unacknowledged %s reads %d bytes, %v", kept, pending, k, len(got), err)
			}
		}
	})
}

// checkReorderings runs check on every reordering of pl's pending
// operations, each restored into its own directory.
func checkReorderings(t *testing.T, pl *errorfs.PowerLoss, check func(t *testing.T, dst string, kept, pending []string)) {
	t.Helper()
	pending := pl.Pending()
	for outcome, keep := range reorderings(len(pending)) {
		t.Run(outcome, func(t *testing.T) {
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
			check(t, dst, kept, pending)
		})
	}
}
