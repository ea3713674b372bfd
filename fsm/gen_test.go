package fsm

import (
	"fmt"
	"reflect"

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
	// sessions: half of the PutStarts, PutEnds, PutRevokes and Removes
	// carry a client session (Removes sometimes as a group commit of
	// spans, sometimes with expected incarnations), and some draws repeat
	// an earlier sessioned request exactly, as a client retry would.
	sessions bool
	// jobs: some draws are bulk-delete job commands (start, a leader's
	// step from the fsm's candidates or a stale one, cancel); off by
	// default, since the model does not model jobs.
	jobs    bool
	clients map[string]*genClient
}

// genClient is one sessioned client of the generator: its next seq, its
// floor, and every request it sent (a retry re-sends one as it was).
type genClient struct {
	next, floor uint64
	sent        []Command
}

var genSessionClients = []string{"u0", "u1"}

// session draws a new request's session: the next seq of a random
// client, with the floor moved up to somewhere at most that seq.
func (g *cmdGen) session() api.Session {
	id := genSessionClients[g.pick(len(genSessionClients))]
	if g.clients == nil {
		g.clients = map[string]*genClient{}
	}
	c := g.clients[id]
	if c == nil {
		c = &genClient{next: 1, floor: 1}
		g.clients[id] = c
	}
	s := api.Session{ClientID: id, Seq: c.next}
	c.next++
	if g.pick(2) == 0 {
		c.floor += uint64(g.pick(int(s.Seq-c.floor) + 1))
	}
	s.Floor = c.floor
	return s
}

// sessioned gives cmd a new session (half of the time when sessions are
// on) and remembers it for retries.
func (g *cmdGen) sessioned(cmd Command) Command {
	if !g.sessions || g.pick(2) == 0 {
		return cmd
	}
	s := g.session()
	// Every sessioned body has Session (api.Session) `msgpack:"sess"`.
	reflect.ValueOf(cmd).Elem().FieldByName("Session").Set(reflect.ValueOf(s))
	if c, ok := cmd.(*Remove); ok {
		if len(c.Keys) > 1 && g.pick(3) == 0 {
			// A group commit: the first key is another request.
			c.Session = api.Session{}
			c.Spans = []RemoveSpan{{Session: s, N: 1}, {Session: g.session(), N: len(c.Keys) - 1}}
			if g.pick(3) == 0 {
				c.Spans[1].Session = api.Session{}
			}
			if !c.Spans[1].Session.IsZero() {
				g.remember(c.Spans[1].Session.ClientID, &Remove{Keys: c.Keys[1:], IfInc: tail(c.IfInc), Session: c.Spans[1].Session})
			}
			g.remember(s.ClientID, &Remove{Keys: c.Keys[:1], IfInc: head(c.IfInc), Session: s})
			return c
		}
	}
	g.remember(s.ClientID, cmd)
	return cmd
}

func head(incs []api.ObjectIncarnation) []api.ObjectIncarnation {
	if len(incs) == 0 {
		return nil
	}
	return incs[:1]
}

func tail(incs []api.ObjectIncarnation) []api.ObjectIncarnation {
	if len(incs) == 0 {
		return nil
	}
	return incs[1:]
}

func (g *cmdGen) remember(client string, cmd Command) {
	c := g.clients[client]
	c.sent = append(c.sent, cmd)
}

// retry re-sends an earlier sessioned request as it was (only its time
// moves), or returns nil when there is none.
func (g *cmdGen) retry(now int64) Command {
	if !g.sessions || len(g.clients) == 0 {
		return nil
	}
	c := g.clients[genSessionClients[g.pick(len(genSessionClients))]]
	if c == nil || len(c.sent) == 0 {
		return nil
	}
	switch x := c.sent[g.pick(len(c.sent))]; x.(type) {
	case *PutStart, *PutEnd, *PutRevoke, *Remove, *Settings, *JobStart, *JobCancel:
		return atTime(x, now)
	}
	return nil
}

// atTime is a copy of cmd carrying the leader's time now (the field the
// command table knows).
func atTime(cmd Command, now int64) Command {
	cp := reflect.New(reflect.TypeOf(cmd).Elem())
	cp.Elem().Set(reflect.ValueOf(cmd).Elem())
	c := cp.Interface().(Command)
	*c.leaderNow() = now
	return c
}

// job draws a bulk-delete job command: mostly a leader's step of an
// active job (its candidates, sometimes fewer, sometimes with a pause),
// sometimes a stale step, a start or a cancel.
func (g *cmdGen) job(f *FSM, now int64) Command {
	jobs := f.Jobs()
	switch p := g.pick(10); {
	case p < 2 || len(jobs) == 0:
		return g.sessioned(&JobStart{Prefix: []string{"", "k", "k1", "x"}[g.pick(4)], Now: now})
	case p == 2:
		return g.sessioned(&JobCancel{Job: jobs[g.pick(len(jobs))].ID + uint64(g.pick(2)), Now: now})
	}
	j := jobs[g.pick(len(jobs))]
	cur, cands, last, _ := f.JobCandidates(j.ID, 1+g.pick(3))
	keys := candidateKeys(cands)
	step := &JobAdvance{Job: j.ID, After: cur.Cursor, Keys: keys, Last: last, Now: now}
	switch g.pick(6) {
	case 0:
		step.Keys, step.Last, step.Pause = nil, false, true
	case 1:
		step.After = "k0" // stale unless the cursor is there
	}
	return step
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
	if g.sessions && g.pick(6) == 0 {
		if cmd := g.retry(now); cmd != nil {
			return cmd
		}
	}
	if g.sessions && g.pick(40) == 0 {
		// The registry capacity changes through the log, sometimes below
		// the tasks pending (refused).
		return g.sessioned(&Settings{Settings: api.Settings{RegistryCapacity: 1 + g.pick(8)}, Now: now})
	}
	if g.jobs && g.pick(8) == 0 {
		return g.job(f, now)
	}
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
		return g.sessioned(&PutStart{PutStartItem: PutStartItem{Key: genKeys[g.pick(4)], Size: 1, Replicas: rs, PutID: "x", IfAbsent: g.pick(4) == 0}, Now: now})
	case 8, 9, 10, 11:
		key := genKeys[g.pick(4)]
		_, pending, _, _ := f.Stat(key)
		inc := api.ObjectIncarnation{Low: uint64(g.pick(50))}
		if pending != nil && g.pick(5) != 0 {
			inc = *pending
		}
		if g.pick(4) == 0 {
			return g.sessioned(&PutRevoke{Key: key, Incarnation: inc, Now: now})
		}
		return g.sessioned(&PutEnd{Key: key, Incarnation: inc, Now: now})
	case 12, 13, 14:
		n := 1 + g.pick(4)
		keys := make([]string, n)
		for i := range keys {
			keys[i] = genKeys[g.pick(4)]
		}
		r := &Remove{Keys: keys, Now: now}
		if g.sessions && g.pick(3) == 0 {
			// Expected incarnations: the current one, a wrong one, or none.
			for _, k := range keys {
				var inc api.ObjectIncarnation
				switch v, err := f.Get(k); {
				case err == nil && g.pick(3) != 0:
					inc = v.Incarnation
				case g.pick(2) == 0:
					inc = api.ObjectIncarnation{High: 7, Low: uint64(1 + g.pick(50))}
				}
				r.IfInc = append(r.IfInc, inc)
			}
		}
		return g.sessioned(r)
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
