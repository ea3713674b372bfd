//go:build testhooks

package holder

import (
	"errors"
	"testing"

	"sexton/api"
)

// The relocation race (docs/DESIGN.md §6): a tombstone for a record GC is
// moving lands on the record wherever it lives when the round commits.
// Each test drives one interleaving through the store's step hooks and
// checks, after a reopen, that the record is tombstoned in the
// authoritative bucket (the target) and never visible.

// relocate runs one merge round of mergeFixture, tombstoning "victim" at
// the hook step `at` (once), and returns the tombstone's outcome.
func relocate(t *testing.T, at string) (*gcFixture, uint64) {
	t.Helper()
	f := mergeFixture(t, StoreOptions{})
	target := f.s.nextID
	var outcome []api.AckOutcome
	f.s.hook = func(step string) {
		if step != at || outcome != nil {
			return
		}
		outcome = outcomes(f.s.BatchMarkDeleted([]api.LocalDeleteTask{task(f.s, 9, "victim", f.incs["victim"])}))
	}
	oneRound(t, f.s)
	f.s.hook = nil
	if len(outcome) != 1 || outcome[0] != api.AckRemoved {
		t.Fatalf("tombstone at %s: %v, want Removed", at, outcome)
	}
	f.dead["victim"] = true
	checkRelocated(t, f, target)
	return f, target
}

// checkRelocated: the round committed, the victim is tombstoned in the
// target's metadata on disk, invisible now and after a reopen, and a
// replayed task is AlreadyRemoved (the tombstone is still known).
func checkRelocated(t *testing.T, f *gcFixture, target uint64) {
	t.Helper()
	if st := f.s.GCStats(); st.Rounds < 1 || st.CleanupPending {
		t.Fatalf("round did not complete: %+v", st)
	}
	for _, reopen := range []bool{false, true} {
		if reopen {
			f.reopen(StoreOptions{})
		}
		if _, err := f.s.Get("victim", f.incs["victim"]); !errors.Is(err, ErrNotFound) {
			t.Fatalf("victim visible (reopen %v): %v", reopen, err)
		}
		if !tombstonedOnDisk(t, f.dir, target, "victim", f.incs["victim"]) {
			t.Fatalf("victim not tombstoned in target %d (reopen %v)", target, reopen)
		}
		if f.exists(metaName(1)) {
			t.Fatal("source 1 survived")
		}
		wantOutcomes(t, f.s.BatchMarkDeleted([]api.LocalDeleteTask{task(f.s, 9, "victim", f.incs["victim"])}), api.AckAlreadyRemoved)
		f.check()
	}
	// Later rounds reclaim the relocated tombstone with its bytes (greedy:
	// the age-aware default lets the young target, at exactly the ratio,
	// wait for more of it to die).
	o := testGCOptions()
	o.AgeAware = false
	newGCWorker(f.s, o, nil).pass()
	if u := f.s.Usage(); u.DeadBytes != 0 {
		t.Fatalf("dead bytes left after the next pass: %+v", u)
	}
	f.check()
}

// oneRound plans and runs exactly one round with the default policy.
func oneRound(t *testing.T, s *Store) {
	t.Helper()
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	s.mu.Lock()
	p := s.planRoundLocked(gcPolicy{ratio: DefaultGCDeletedRatio}, nil)
	s.mu.Unlock()
	if p == nil {
		t.Fatal("no round to run")
	}
	if err := newGCWorker(s, testGCOptions(), nil).runRound(p); err != nil {
		t.Fatal(err)
	}
}

func TestRelocationTombstoneBeforeCopy(t *testing.T) { relocate(t, hookGCAfterPrepare) }

func TestRelocationTombstoneDuringCopy(t *testing.T) { relocate(t, hookGCCopiedRecord) }

func TestRelocationTombstoneBetweenCopyAndCommit(t *testing.T) { relocate(t, hookGCBeforeCommit) }

func TestRelocationTombstoneAfterCommit(t *testing.T) { relocate(t, hookGCAfterCommit) }

// TestRelocationTombstoneResolvedBeforeCommitRetriesAgainstTarget is the
// race proper: the delete path resolved the record to its source, then the
// round committed, then the delete path reached the source. It must find
// the record moved, re-resolve, and tombstone the replacement — not answer
// StaleVersion.
func TestRelocationTombstoneResolvedBeforeCommitRetriesAgainstTarget(t *testing.T) {
	f := mergeFixture(t, StoreOptions{})
	target := f.s.nextID
	ran := false
	f.s.hook = func(step string) {
		if step == hookTombstoneResolved && !ran {
			ran = true
			if got := bucketOf(t, f.s, "victim", f.incs["victim"]); got != 1 {
				t.Errorf("victim resolved in bucket %d, want source 1", got)
			}
			oneRound(t, f.s)
		}
	}
	rs := f.s.BatchMarkDeleted([]api.LocalDeleteTask{task(f.s, 9, "victim", f.incs["victim"])})
	f.s.hook = nil
	wantOutcomes(t, rs, api.AckRemoved)
	f.dead["victim"] = true
	checkRelocated(t, f, target)
}

// A record truly absent stays StaleVersion even while a round runs.
func TestRelocationAbsentIncarnationIsStale(t *testing.T) {
	f := mergeFixture(t, StoreOptions{})
	var got []api.AckOutcome
	f.s.hook = func(step string) {
		if step == hookGCBeforeCommit && got == nil {
			got = outcomes(f.s.BatchMarkDeleted([]api.LocalDeleteTask{task(f.s, 9, "victim", incN(999))}))
		}
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	if len(got) != 1 || got[0] != api.AckStaleVersion {
		t.Fatalf("absent incarnation: %v", got)
	}
	f.check()
}
