package fsm

import (
	"fmt"

	"sexton/api"
)

// cmdGen draws plausible random commands over a small universe (3 clients,
// 3 segments, 4 keys) so that collisions (overwrites, stale epochs,
// duplicate acks, a full registry) are frequent. pick(n) returns a number
// in [0, n). It peeks at the FSM only to aim acks and PutEnds at things
// that exist; the FSM under test decides what they do.
type cmdGen struct {
	pick func(n int) int
	now  int64
	// retireOdds: one in retireOdds of the rarest draws is a RetireStorage
	// (retiring is permanent, so long runs want it rare); 0 means 4.
	retireOdds int
	// batches: some PutStarts and PutEnds are drawn as PutStartBatch and
	// PutEndBatch instead (off by default so other tests keep their
	// streams).
	batches bool
}

var (
	genClients = []string{"c0", "c1", "c2"}
	genSegs    = []api.SegmentID{"s0", "s1", "s2"}
	genKeys    = []string{"k0", "k1", "k2", "k3"}
)

func (g *cmdGen) segs() []api.SegmentID {
	n := 1 + g.pick(2)
	start := g.pick(len(genSegs))
	out := make([]api.SegmentID, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, genSegs[(start+i)%len(genSegs)])
	}
	return out
}

func (g *cmdGen) epochOf(f *FSM, seg api.SegmentID) uint64 {
	info, _ := f.Segment(seg)
	switch g.pick(4) {
	case 0:
		return info.MountEpoch + 1
	case 1:
		if info.MountEpoch > 0 {
			return info.MountEpoch - 1
		}
	}
	return info.MountEpoch
}

func (g *cmdGen) next(f *FSM) Command {
	g.now += int64(1 + g.pick(3))
	now := g.now
	switch g.pick(20) {
	case 0:
		return &EpochBegin{Term: uint64(g.pick(5)), LeaderID: "m", ClusterID: uint64(g.pick(3)), Now: now}
	case 1, 2:
		caps := tombstoneCaps
		if g.pick(4) == 0 {
			caps = nil
		}
		return &MountLocalDisk{ClientID: genClients[g.pick(3)], Segment: genSegs[g.pick(3)], Pool: "p", Capacity: int64(g.pick(2)), Capabilities: caps, Endpoint: "e", Now: now}
	case 3:
		seg := genSegs[g.pick(3)]
		return &UnmountLocalDisk{Segment: seg, Epoch: g.epochOf(f, seg), Now: now}
	case 4, 5, 6, 7:
		if g.batches && g.pick(3) == 0 {
			return g.batch(f, now)
		}
		var rs []api.ReplicaDescriptor
		for _, s := range g.segs() {
			rs = append(rs, api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: s, Pool: "p"})
		}
		return &PutStart{Key: genKeys[g.pick(4)], Size: 1, Replicas: rs, PutID: "x", IfAbsent: g.pick(4) == 0, Now: now}
	case 8, 9, 10, 11:
		key := genKeys[g.pick(4)]
		_, pending, _, _ := f.Stat(key)
		inc := api.ObjectIncarnation{Low: uint64(g.pick(50))}
		if pending != nil && g.pick(5) != 0 {
			inc = *pending
		}
		if g.pick(4) == 0 {
			return &PutRevoke{Key: key, Incarnation: inc, Now: now}
		}
		return &PutEnd{Key: key, Incarnation: inc, Now: now}
	case 12, 13, 14:
		n := 1 + g.pick(4)
		keys := make([]string, n)
		for i := range keys {
			keys[i] = genKeys[g.pick(4)]
		}
		return &Remove{Keys: keys, Now: now}
	case 15, 16, 17, 18:
		seg := genSegs[g.pick(3)]
		tasks, _ := f.ListTasks(seg, 0)
		var rs []api.TaskResult
		for _, t := range tasks {
			if g.pick(2) == 0 {
				continue
			}
			r := api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation, Outcome: api.AckOutcome(1 + g.pick(4))}
			switch g.pick(8) {
			case 0:
				r.Incarnation.Low++
			case 1:
				r.Key += "x"
			case 2:
				r.TaskID += 100
			}
			rs = append(rs, r)
		}
		if g.pick(30) == 0 {
			rs = append(rs, api.TaskResult{TaskID: 1, Outcome: api.AckOutcome(9)})
		}
		return &LocalDeleteAck{Segment: seg, Epoch: g.epochOf(f, seg), Results: rs, Now: now}
	default:
		odds := g.retireOdds
		if odds == 0 {
			odds = 4
		}
		if g.pick(odds) == 0 {
			return &RetireStorage{Segment: genSegs[g.pick(3)], By: "ops", Reason: fmt.Sprint("r", now), Now: now}
		}
		return &Remove{Keys: []string{genKeys[g.pick(4)]}, Now: now}
	}
}

// batch draws a PutStartBatch (keys distinct, sometimes duplicated) or a
// PutEndBatch aimed at the keys' pending puts.
func (g *cmdGen) batch(f *FSM, now int64) Command {
	n := 1 + g.pick(len(genKeys))
	start := g.pick(len(genKeys))
	if g.pick(2) == 0 {
		items := make([]PutEndItem, n)
		for i := range items {
			key := genKeys[(start+i)%len(genKeys)]
			_, pending, _, _ := f.Stat(key)
			inc := api.ObjectIncarnation{Low: uint64(g.pick(50))}
			if pending != nil && g.pick(5) != 0 {
				inc = *pending
			}
			items[i] = PutEndItem{Key: key, Incarnation: inc}
		}
		return &PutEndBatch{Items: items, Now: now}
	}
	items := make([]PutStartItem, n)
	for i := range items {
		var rs []api.ReplicaDescriptor
		for _, s := range g.segs() {
			rs = append(rs, api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: s, Pool: "p"})
		}
		items[i] = PutStartItem{Key: genKeys[(start+i)%len(genKeys)], Size: 1, Replicas: rs, PutID: "x", IfAbsent: g.pick(4) == 0}
	}
	if g.pick(10) == 0 {
		items = append(items, items[0])
	}
	return &PutStartBatch{Items: items, Now: now}
}
