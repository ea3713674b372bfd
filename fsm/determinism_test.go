package fsm

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestDeterministicSnapshots applies one random command sequence to two
// FSMs, and to a third that is snapshotted and restored halfway: all three
// must write byte-identical snapshots, and return equal results throughout.
func TestDeterministicSnapshots(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		gen := &cmdGen{pick: func(n int) int { return rng.IntN(n) }, retireOdds: 300, batches: true, sessions: true, jobs: true}
		a, b, c := newWithCapacity(8), newWithCapacity(8), newWithCapacity(8)
		const steps = 1500
		for i := 1; i <= steps; i++ {
			data, err := Encode(gen.next(a))
			if err != nil {
				t.Fatal(err)
			}
			ra, errA := a.Apply(uint64(i), 1, data)
			rb, errB := b.Apply(uint64(i), 1, data)
			rc, errC := c.Apply(uint64(i), 1, data)
			if errA != nil || errB != nil || errC != nil {
				t.Fatalf("seed %d step %d: %v %v %v", seed, i, errA, errB, errC)
			}
			if !resultsEqual(ra, rb) || !resultsEqual(ra, rc) {
				t.Fatalf("seed %d step %d: results differ: %#v %#v %#v", seed, i, ra, rb, rc)
			}
			if i == steps/2 {
				c = restored(t, c)
			}
		}
		sa, sb, sc := snapshotBytes(t, a), snapshotBytes(t, b), snapshotBytes(t, c)
		if !bytes.Equal(sa, sb) || !bytes.Equal(sa, sc) {
			t.Fatalf("seed %d: snapshots differ (%d, %d, %d bytes)", seed, len(sa), len(sb), len(sc))
		}
		st := a.Stats()
		states := map[string]int{}
		for _, j := range a.Jobs() {
			states[j.State]++
		}
		t.Logf("seed %d: %d objects, %d pending puts, %d tasks, jobs %v, %d bytes", seed, st.Objects, st.PendingPuts, st.PendingTasks, states, len(sa))
	}
}
