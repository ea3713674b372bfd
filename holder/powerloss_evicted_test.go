//go:build testhooks

package holder

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
)

// An eviction cut at each step of its tombstone: answered only after the
// directory fsync, and then reported evicted (not removed) after the power
// comes back; unanswered, the record is live or evicted, never removed.
// Then the evicted tombstone's reclaim by GC, cut at each step of the
// floor it raises and after the pass: the floor keeps the mark.
func TestPowerLossEvicted(t *testing.T) {
	for _, point := range withAfterReturn(TombstoneCrashPoints) {
		t.Run("tombstone/"+pointName(point), func(t *testing.T) {
			s, acked := cutMark(t, point, "tombstone.after-dir-fsync", true, api.AckRemoved, (*Store).BatchMarkEvicted)
			r, ok := deadRecord(s.Records(), crashKey, crashInc)
			switch {
			case acked && (!r.Tombstoned || !r.Evicted):
				t.Fatalf("eviction answered, after the cut the record reads %+v (present %v)", r, ok)
			case r.Tombstoned && !r.Evicted:
				t.Fatalf("an eviction reads as a removal after the cut: %+v", r)
			}
		})
	}
	for _, point := range withAfterReturn(GCCrashPoints[:5]) {
		if point != "" && !strings.HasPrefix(point, "gc.floor.") {
			t.Fatalf("GCCrashPoints starts with %s, not the floor's points", point)
		}
		t.Run("gc-floor/"+pointName(point), func(t *testing.T) {
			dir := t.TempDir()
			pl := newPowerLoss(t, dir)
			s := openT(t, dir, StoreOptions{FS: pl, BucketKeysLimit: 2})
			mustPut(t, s, crashKey, crashInc, crashValue())
			mustPut(t, s, "bystander", incN(1), []byte("stays"))
			mustPut(t, s, "next", incN(9), []byte("opens bucket 2"))
			wantOutcomes(t, s.BatchMarkEvicted([]api.LocalDeleteTask{task(s, 1, crashKey, crashInc)}), api.AckRemoved)
			hit := cutAtPoint(t, pl, point)
			newGCWorker(s, testGCOptions(), nil).pass()
			if point != "" && !hit.Load() {
				t.Fatalf("%s was not hit", point)
			}
			if point == "" && (s.GCStats().Rounds == 0 || s.GCStats().LastError != "") {
				t.Fatalf("no clean round ran: %+v", s.GCStats())
			}
			powerCut(t, s, pl)
			wantCleanInspect(t, dir, "after the cut")

			s = openT(t, dir, StoreOptions{BucketKeysLimit: 2})
			defer s.Close()
			mustGet(t, s, "bystander", incN(1), []byte("stays"))
			wantDead(t, s, fmt.Sprintf("cut at %s", pointName(point)), crashKey, crashInc, true)
			wantRefused(t, s, crashKey, crashInc)
		})
	}
}
