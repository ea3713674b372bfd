package fsm

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"sexton/api"
)

// TestPropertyOneCommitPuts runs random mixes of block reservations,
// grants, one-commit puts, PutStart/PutEnd puts, removes, reconciles,
// tombstoning holders and time against the FSM, with a model of the
// holders' copies, and checks after every step the two promises of
// docs/DESIGN.md §8 "One-commit puts":
//
//   - a PutCommit that succeeds is above every acknowledged incarnation
//     of its key that still has an untombstoned copy on a holder (so the
//     newest acknowledged copy is the value: invariant 7);
//   - NotLive never names an incarnation that a later PutCommit makes
//     live, nor the key's COMPLETE incarnation.
func TestPropertyOneCommitPuts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 2))
		f := New(Config{})
		index, now := uint64(0), int64(1_000_000)
		apply := func(cmd Command) any {
			data, err := Encode(cmd)
			if err != nil {
				rt.Fatalf("encode %s: %v", cmd.Type(), err)
			}
			index++
			res, err := f.Apply(index, 1, data)
			if err != nil {
				rt.Fatalf("apply %s: %v", cmd.Type(), err)
			}
			return res
		}
		segs := []api.SegmentID{"s1", "s2"}
		keys := []string{"a", "b", "c"}
		apply(&EpochBegin{Term: 1, LeaderID: "m", ClusterID: 7, Now: now})
		epoch := map[api.SegmentID]uint64{}
		for _, s := range segs {
			r := apply(&MountLocalDisk{ClientID: "c-" + string(s), Segment: s, Pool: "p", Capacity: 1 << 30, Capabilities: tombstoneCaps, Endpoint: "h", Now: now}).(*MountResult)
			epoch[s] = r.MountEpoch
		}
		type copyRef struct {
			key string
			inc api.ObjectIncarnation
			seg api.SegmentID
		}
		type grant struct {
			key string
			inc api.ObjectIncarnation
			seg api.SegmentID
		}
		live := map[copyRef]bool{}        // untombstoned copies on the holders
		acked := map[api.ObjectRef]bool{} // acknowledged (committed) incarnations
		named := map[api.ObjectRef]bool{} // what NotLive ever named
		var blocks [][2]uint64            // the leader's blocks: next, hi
		var grants []grant                // granted and written, not yet committed
		tombstone := func(k string, inc api.ObjectIncarnation, s api.SegmentID) {
			delete(live, copyRef{k, inc, s})
		}
		for step := 0; step < 60; step++ {
			switch rng.IntN(8) {
			case 0: // reserve
				r := apply(&ReserveIncarnations{Count: uint64(1 + rng.IntN(4)), Expires: now + int64(1+rng.IntN(5))*1e6, Now: now}).(*ReserveResult)
				if r.Err == nil && r.Lo <= r.Hi {
					blocks = append(blocks, [2]uint64{r.Lo, r.Hi})
				}
			case 1: // grant and write, from the newest block with room
				for i := len(blocks) - 1; i >= 0; i-- {
					if blocks[i][0] <= blocks[i][1] {
						g := grant{keys[rng.IntN(len(keys))], api.ObjectIncarnation{High: 7, Low: blocks[i][0]}, segs[rng.IntN(len(segs))]}
						blocks[i][0]++
						grants = append(grants, g)
						live[copyRef(g)] = true
						break
					}
				}
			case 2: // commit one outstanding grant
				if len(grants) == 0 {
					continue
				}
				i := rng.IntN(len(grants))
				g := grants[i]
				grants = append(grants[:i], grants[i+1:]...)
				r := apply(&PutCommit{PutCommitItem: PutCommitItem{Key: g.key, Incarnation: g.inc, Size: 1, Replicas: localReplicas(g.seg)}, Now: now}).(*PutEndResult)
				if r.Err != nil {
					continue
				}
				ref := api.ObjectRef{Key: g.key, Incarnation: g.inc}
				if named[ref] {
					rt.Fatalf("step %d: %s %s committed after NotLive named it", step, g.key, g.inc)
				}
				for c := range live {
					if c.key == g.key && acked[api.ObjectRef{Key: c.key, Incarnation: c.inc}] && !c.inc.Less(g.inc) {
						rt.Fatalf("step %d: %s %s committed while the acknowledged %s still has a copy on %s", step, g.key, g.inc, c.inc, c.seg)
					}
				}
				acked[ref] = true
			case 3: // a PutStart/PutEnd put
				k, s := keys[rng.IntN(len(keys))], segs[rng.IntN(len(segs))]
				r := apply(&PutStart{PutStartItem: PutStartItem{Key: k, Size: 1, Replicas: localReplicas(s)}, Now: now}).(*PutStartResult)
				if r.Err != nil {
					continue
				}
				live[copyRef{k, r.Incarnation, s}] = true
				if e := apply(&PutEnd{Key: k, Incarnation: r.Incarnation, Now: now}).(*PutEndResult); e.Err == nil {
					acked[api.ObjectRef{Key: k, Incarnation: r.Incarnation}] = true
				}
			case 4: // remove
				apply(&Remove{Keys: []string{keys[rng.IntN(len(keys))]}, Now: now})
			case 5: // time passes
				now += int64(1+rng.IntN(3)) * 1e6
				apply(&ReserveIncarnations{Now: now})
			case 6: // a holder reconciles its copies and tombstones what is named
				s := segs[rng.IntN(len(segs))]
				var refs []api.ObjectRef
				for c := range live {
					if c.seg == s {
						refs = append(refs, api.ObjectRef{Key: c.key, Incarnation: c.inc})
					}
				}
				out, err := f.NotLive(s, epoch[s], refs)
				if err != nil {
					rt.Fatalf("notlive: %v", err)
				}
				for _, r := range out {
					if v, err := f.Get(r.Key); err == nil && v.Incarnation == r.Incarnation {
						for _, rep := range v.Replicas {
							if rep.Segment == s {
								rt.Fatalf("step %d: NotLive named %s %s, the COMPLETE incarnation on %s", step, r.Key, r.Incarnation, s)
							}
						}
					}
					named[r] = true
					tombstone(r.Key, r.Incarnation, s)
				}
			case 7: // a holder fetches its tasks, tombstones and acks them
				s := segs[rng.IntN(len(segs))]
				ts, _, err := f.FetchTasks(s, epoch[s], 0)
				if err != nil {
					rt.Fatalf("fetch: %v", err)
				}
				var res []api.TaskResult
				for _, x := range ts {
					tombstone(x.Key, x.Incarnation, s)
					res = append(res, api.TaskResult{TaskID: x.ID, Key: x.Key, Incarnation: x.Incarnation, Outcome: api.AckRemoved})
				}
				if len(res) > 0 {
					apply(&LocalDeleteAck{Segment: s, Epoch: epoch[s], Results: res, Now: now})
				}
			}
		}
	})
}
