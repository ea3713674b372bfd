package fsm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"sexton/api"
)

// fetchView is what a long poll of one segment can observe: its fetch
// gate (known, mounted at which epoch, capable, retired) and the ids of
// its fetchable tasks.
type fetchView struct {
	gate string
	ids  []uint64
}

func fetchViews(f *FSM) map[api.SegmentID]fetchView {
	out := map[api.SegmentID]fetchView{}
	for _, s := range f.Segments() {
		v := fetchView{gate: fmt.Sprint(s.Mounted, s.MountEpoch, s.Retired, s.Capabilities)}
		tasks, _, err := f.FetchTasks(s.ID, s.MountEpoch, api.MaxFetchLimit)
		if err == nil {
			for _, t := range tasks {
				v.ids = append(v.ids, t.ID)
			}
		}
		out[s.ID] = v
	}
	return out
}

// missedWakes names the segments whose poll could see something new after
// an entry (a changed gate, a task fetchable now that was not before) that
// the entry's Wake does not list.
func missedWakes(before, after map[api.SegmentID]fetchView, w Wake) []string {
	if w.All {
		return nil
	}
	var missed []string
	for seg, a := range after {
		if slices.Contains(w.Segments, seg) {
			continue
		}
		b, known := before[seg]
		if !known || a.gate != b.gate {
			missed = append(missed, fmt.Sprintf("%s (gate %q -> %q)", seg, b.gate, a.gate))
			continue
		}
		for _, id := range a.ids {
			if !slices.Contains(b.ids, id) {
				missed = append(missed, fmt.Sprintf("%s (task %d became fetchable)", seg, id))
				break
			}
		}
	}
	slices.Sort(missed)
	return missed
}

// Every entry of random sequences (overwrites, removes, acks on every
// segment, remounts, retires, batches, sessions, bulk-delete jobs) lists
// every segment whose poll could find something new after it — in
// particular a task released by an ack on another segment — and a
// restored FSM reports the same Wakes as the one that applied everything.
func TestWakeListsEverySegmentWithNewWork(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		gen := &cmdGen{pick: func(n int) int { return rng.IntN(n) }, retireOdds: 200, batches: true, sessions: true, jobs: true}
		a, c := newWithCapacity(8), newWithCapacity(8)
		released := 0 // wakes of a segment the entry itself did not name
		const steps = 1500
		for i := 1; i <= steps; i++ {
			cmd := gen.next(a)
			data, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			before := fetchViews(a)
			_, wa, errA := a.ApplyWake(uint64(i), 1, data)
			wa.Segments = slices.Clone(wa.Segments)
			_, wc, errC := c.ApplyWake(uint64(i), 1, data)
			if errA != nil || errC != nil {
				t.Fatalf("seed %d step %d: %v %v", seed, i, errA, errC)
			}
			if fmtWake(wa) != fmtWake(wc) {
				t.Fatalf("seed %d step %d %s: wakes differ: %s vs %s (restored)", seed, i, cmd.Type(), fmtWake(wa), fmtWake(wc))
			}
			if missed := missedWakes(before, fetchViews(a), wa); missed != nil {
				t.Fatalf("seed %d step %d %s %+v: woke %s, missed %v", seed, i, cmd.Type(), cmd, fmtWake(wa), missed)
			}
			if ack, ok := cmd.(*LocalDeleteAck); ok && slices.ContainsFunc(wa.Segments, func(s api.SegmentID) bool { return s != ack.Segment }) {
				released++
			}
			if i == steps/2 {
				c = restored(t, c)
			}
		}
		// The release case must actually occur, or this test proves
		// nothing about it.
		if released == 0 {
			t.Fatalf("seed %d: no ack woke another segment", seed)
		}
		t.Logf("seed %d: %d acks woke another segment", seed, released)
	}
}

// An entry that touches more segments than the linear search covers
// still lists each once, sorted.
func TestWakeSetDeduplicatesPastTheLinearLimit(t *testing.T) {
	var w wakeSet
	for round := 0; round < 2; round++ {
		w.reset()
		var want []api.SegmentID
		for i := 3*wakeLinear - 1; i >= 0; i-- {
			id := api.SegmentID(fmt.Sprintf("s%03d", i))
			want = append(want, id)
			w.segment(id)
			w.segment(id)
			w.segment(api.SegmentID("s000"))
		}
		slices.Sort(want)
		if got := w.take(); !slices.Equal(got.Segments, want) || got.All || got.DFS {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
	}
}
