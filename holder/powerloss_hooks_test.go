//go:build testhooks

package holder

import "testing"

// A power cut at each step of a GC merge round (the rest of the round then
// fails as on a dead machine): after the power comes back the store opens,
// every live record reads back, nothing dead is visible, every deleted
// incarnation stays refused, and the next pass reclaims everything.
func TestPowerCutDuringGCRound(t *testing.T) {
	for _, step := range []string{hookGCAfterPrepare, hookGCCopiedRecord, hookGCBeforeCommit, hookGCAfterCommit} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			pl := newPowerLoss(t, dir)
			f := newGCFixtureAt(t, dir, StoreOptions{FS: pl})
			gcCrashScenarios["merge"](f)
			f.s.hook = func(s string) {
				if s == step {
					pl.Cut()
				}
			}
			newGCWorker(f.s, testGCOptions(), nil).pass()
			powerCut(t, f.s, pl)
			f.s = openT(t, dir, StoreOptions{BucketKeysLimit: 4})
			f.check()
			newGCWorker(f.s, testGCOptions(), nil).pass()
			if u := f.s.Usage(); u.DeadBytes != 0 {
				t.Fatalf("after a cut at %s the next pass left %+v (%+v)", step, u, f.s.GCStats())
			}
			f.check()
		})
	}
}
