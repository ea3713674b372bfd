package holder

import (
	"errors"
	"testing"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
)

// powerCut cuts the power under a store opened on pl, closes what is left
// of it, and brings the directory back as a machine would find it.
func powerCut(t *testing.T, s *Store, pl *errorfs.PowerLoss) {
	t.Helper()
	pl.Cut()
	_ = s.Close() // may report the cut; the directory is what matters
	if err := pl.Restore(); err != nil {
		t.Fatal(err)
	}
}

func newPowerLoss(t *testing.T, dir string) *errorfs.PowerLoss {
	t.Helper()
	pl, err := errorfs.NewPowerLoss(fsys.OS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// A power cut right after a tombstone batch answered its terminal
// outcomes loses neither: the record tombstoned (Removed) stays dead and
// refused, and so does the incarnation whose record was absent
// (StaleVersion, kept by the floor); a bystander survives.
func TestPowerCutAfterTombstoneAnswered(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	s := openT(t, dir, StoreOptions{FS: pl})
	mustPut(t, s, "gone", incN(1), []byte("removed value"))
	mustPut(t, s, "stays", incN(2), []byte("live value"))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "gone", incN(1)), task(s, 2, "late", incN(5))}),
		api.AckRemoved, api.AckStaleVersion)
	powerCut(t, s, pl)

	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if _, err := s.Get("gone", incN(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tombstoned record live after the power cut: %v", err)
	}
	wantRefused(t, s, "gone", incN(1))
	wantRefused(t, s, "late", incN(5))
	mustGet(t, s, "stays", incN(2), []byte("live value"))
}

// A power cut right after a GC pass returned: every live record reads back
// (the round fsynced the target's data before it committed), nothing dead
// is visible, and the floor still refuses every incarnation the round
// reclaimed. Run for a merge round and for an unlink-only round.
func TestPowerCutAfterGCRound(t *testing.T) {
	for _, scenario := range []string{"merge", "unlink"} {
		t.Run(scenario, func(t *testing.T) {
			dir := t.TempDir()
			pl := newPowerLoss(t, dir)
			f := newGCFixtureAt(t, dir, StoreOptions{FS: pl})
			gcCrashScenarios[scenario](f)
			newGCWorker(f.s, testGCOptions(), nil).pass()
			if st := f.s.GCStats(); st.Rounds == 0 || st.LastError != "" {
				t.Fatalf("no clean round ran: %+v", st)
			}
			if f.s.FloorEntries() == 0 {
				t.Fatal("the round reclaimed no tombstone: the test would not exercise the floor")
			}
			powerCut(t, f.s, pl)
			f.s = openT(t, dir, StoreOptions{BucketKeysLimit: 4})
			f.check() // live bytes intact, dead invisible, late writes refused
			f.reopen(StoreOptions{})
			f.check()
		})
	}
}
