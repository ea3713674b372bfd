package fsm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"sexton/api"
)

// digest renders everything observable about the state except the applied
// index/term, so two states can be compared for "nothing changed".
func digest(f *FSM) string {
	var b strings.Builder
	tasks, _ := f.ListTasks("", MaxAckResults)
	fmt.Fprintf(&b, "tasks %v\n", tasks)
	fmt.Fprintf(&b, "segs %v\n", f.Segments())
	for _, k := range genKeys {
		v, p, n, err := f.Stat(k)
		fmt.Fprintf(&b, "%s %v %v %d %v\n", k, v, p, n, err)
	}
	s := f.Stats()
	fmt.Fprintf(&b, "%d %d %d %d %d", s.Objects, s.PendingPuts, s.PendingTasks, s.MasterEpoch, s.ClusterID)
	return b.String()
}

func allTasks(f *FSM) []api.LocalDeleteTask {
	ts, _ := f.ListTasks("", MaxAckResults)
	return ts
}

// TestPropertyInvariants runs random command sequences against the FSM and
// the model, and after every step checks that they agree and that
// invariants 2, 3, 4, 5 and 7 hold.
func TestPropertyInvariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.IntRange(1, 6).Draw(rt, "capacity")
		f, m := newWithCapacity(capacity), newModel(capacity)
		// rapid's own integer draws lean hard towards small values, which
		// would make almost every command an EpochBegin; rapid draws a seed
		// instead and a uniform generator runs from it.
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
		gen := &cmdGen{pick: func(n int) int { return rng.IntN(n) }, retireOdds: 40, sessions: true}
		index := uint64(0)
		apply := func(cmd Command) any {
			data, err := Encode(cmd)
			if err != nil {
				rt.Fatalf("encode: %v", err)
			}
			index++
			res, err := f.Apply(index, 1, data)
			if err != nil {
				rt.Fatalf("apply %s: %v", cmd.Type(), err)
			}
			if got, want := codes(res), m.apply(index, cmd); !slices.Equal(got, want) {
				rt.Fatalf("index %d %s %+v: fsm %v, model %v", index, cmd.Type(), cmd, got, want)
			}
			return res
		}
		apply(&EpochBegin{ClusterID: 7, Now: 1})
		for i, seg := range genSegs {
			apply(&MountLocalDisk{ClientID: genClients[i], Segment: seg, Pool: "p", Capabilities: tombstoneCaps, Endpoint: "e", Now: 1})
		}
		steps := rapid.IntRange(1, 150).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			cmd := gen.next(f)
			before := allTasks(f)
			beforeGets := map[string]string{}
			for _, k := range genKeys {
				v, err := f.Get(k)
				beforeGets[k] = fmt.Sprint(v, err)
			}
			pre := digest(f)
			preSegs, preVersion := placementView(f), f.SegmentsVersion()
			res := apply(cmd)
			after := allTasks(f)

			// The leader caches the segment list by SegmentsVersion: an
			// entry that changed the list changed the version.
			if placementView(f) != preSegs && f.SegmentsVersion() == preVersion {
				rt.Fatalf("%s %+v changed the segments but not SegmentsVersion", cmd.Type(), cmd)
			}

			// Invariant 10: a request answered from the session table
			// changed nothing.
			if duplicate(res) && digest(f) != pre {
				rt.Fatalf("a repeated %s %+v changed the state", cmd.Type(), cmd)
			}

			// The FSM's registry is exactly the model's.
			if !reflect.DeepEqual(after, m.tasks) && !(len(after) == 0 && len(m.tasks) == 0) {
				rt.Fatalf("after %s: tasks %v, model %v", cmd.Type(), after, m.tasks)
			}
			for _, k := range genKeys {
				v, err := f.Get(k)
				e := m.objs[k]
				if (err == nil) != (e != nil && e.complete != nil) {
					rt.Fatalf("Get(%s) = %v, model %v", k, err, e)
				}
				if err == nil && v.Incarnation != e.complete.inc {
					rt.Fatalf("Get(%s) incarnation %s, model %s", k, v.Incarnation, e.complete.inc)
				}
			}

			// Invariant 3 (no lost intent) and 2 (no wrong victim): a task
			// disappears only by a terminal ack naming it exactly under the
			// current epoch, or by retiring its segment.
			for _, t := range before {
				if slices.Contains(after, t) {
					continue
				}
				if !droppedLegitimately(cmd, res, t) {
					rt.Fatalf("task %+v vanished after %s %+v", t, cmd.Type(), cmd)
				}
			}
			if _, ok := cmd.(*LocalDeleteAck); ok {
				for _, k := range genKeys {
					v, err := f.Get(k)
					if fmt.Sprint(v, err) != beforeGets[k] {
						rt.Fatalf("an ack changed object %s", k)
					}
				}
			}

			// Invariant 4: bounded; a key that failed for a full registry is
			// untouched.
			if len(after) > m.capacity {
				rt.Fatalf("registry %d > capacity %d", len(after), m.capacity)
			}
			if got, _ := f.Settings(); got.RegistryCapacity != m.capacity {
				rt.Fatalf("registry capacity %d, model %d", got.RegistryCapacity, m.capacity)
			}
			if r, ok := res.(*RemoveResult); ok {
				for _, kr := range r.Results {
					if codeOf(kr.Err) == api.CodeLocalDeleteRegistryFull {
						v, err := f.Get(kr.Key)
						if fmt.Sprint(v, err) != beforeGets[kr.Key] {
							rt.Fatalf("key %s changed although its Remove failed full", kr.Key)
						}
					}
				}
			}

			// Invariant 7 and fetch completeness; invariant 5 for fetches:
			// a second fetch returns the same and nothing changes.
			d0 := digest(f)
			for _, seg := range genSegs {
				info, ok := f.Segment(seg)
				if !ok {
					continue
				}
				got, _, err := f.FetchTasks(seg, info.MountEpoch, 0)
				if err != nil {
					continue
				}
				var want []api.LocalDeleteTask
				for _, t := range m.tasks {
					if t.Segment == seg && m.fetchable(t) {
						want = append(want, t)
					}
				}
				if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
					rt.Fatalf("fetch %s: %v, model says %v", seg, got, want)
				}
				again, _, _ := f.FetchTasks(seg, info.MountEpoch, 0)
				if !reflect.DeepEqual(got, again) {
					rt.Fatalf("second fetch of %s differs", seg)
				}
			}
			if digest(f) != d0 {
				rt.Fatal("fetch changed the state")
			}

			// Invariant 5: replaying the entry (a duplicate delivery) changes
			// nothing for every command whose replay is idempotent.
			switch cmd.(type) {
			case *LocalDeleteAck, *Remove, *PutEnd, *PutRevoke, *PutStart, *MountLocalDisk, *UnmountLocalDisk:
				if rng.IntN(3) != 0 {
					continue
				}
				pre := digest(f)
				r2 := apply(cmd)
				if _, isStart := cmd.(*PutStart); !isStart || codeOf(r2.(*PutStartResult).Err) != "" {
					if post := digest(f); post != pre {
						rt.Fatalf("replay of %s %+v changed the state:\n%s\n---\n%s", cmd.Type(), cmd, pre, post)
					}
				}
				if a, ok := r2.(*AckResult); ok && a.Dropped != 0 {
					rt.Fatalf("replayed ack dropped %d tasks", a.Dropped)
				}
				if r, ok := r2.(*RemoveResult); ok && r.TasksCreated != 0 {
					rt.Fatalf("replayed remove created %d tasks", r.TasksCreated)
				}
			}
		}
	})
}

// duplicate reports whether every part of res was answered from the
// session table.
func duplicate(res any) bool {
	switch r := res.(type) {
	case *PutStartResult:
		return r.Duplicate
	case *PutEndResult:
		return r.Duplicate
	case *RemoveResult:
		return r.Duplicate
	case *SettingsResult:
		return r.Duplicate
	}
	return false
}

func droppedLegitimately(cmd Command, res any, t api.LocalDeleteTask) bool {
	switch c := cmd.(type) {
	case *RetireStorage:
		return c.Segment == t.Segment
	case *LocalDeleteAck:
		if c.Segment != t.Segment || res.(*AckResult).Err != nil {
			return false
		}
		for _, r := range c.Results {
			if r.TaskID == t.ID && r.Key == t.Key && r.Incarnation == t.Incarnation && r.Outcome.Terminal() {
				return true
			}
		}
	}
	return false
}

// placementView is Segments without the task counts, which change with
// every task and are not what SegmentsVersion names.
func placementView(f *FSM) string {
	segs := f.Segments()
	for i := range segs {
		segs[i].PendingTasks = 0
	}
	return fmt.Sprint(segs)
}
