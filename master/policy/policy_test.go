package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/internal/testutil/datadriven"
)

// TestPolicy runs the leader's pure policies (read leases and the lease
// floor, task retry backoff, the revoke gate, placement, the snapshot
// triggers and log sizing, readiness) against a fake clock, one file of
// testdata/policy per topic, no cluster. Times in commands and outputs
// are offsets from the clock's start (+1.5s), which `advance` moves.
func TestPolicy(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		p := &policy{now: policyStart, soft: NewState(), dfs: NewDFSDuties()}
		p.soft.clock = func() time.Time { return p.now }
		datadriven.RunFile(t, path, p.run)
	})
}

// policyStart is the fake clock's zero.
var policyStart = time.Unix(1_000_000, 0)

// policy is one file's state: the soft state, the clock, placement's
// segment list and the snapshot meter.
type policy struct {
	now   time.Time
	soft  *State
	segs  []api.SegmentInfo
	meter Meter
	dfs   *DFSDuties
}

func rel(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := t.Sub(policyStart)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func ref(c datadriven.Cmd, t *testing.T) api.ObjectRef {
	return api.ObjectRef{Key: c.Need(t, "key"), Incarnation: api.ObjectIncarnation{High: 1, Low: uint64(c.Int(t, "inc", 1))}}
}

func ints(t *testing.T, c datadriven.Cmd, k string) []uint64 {
	var out []uint64
	for _, f := range strings.Split(c.Need(t, k), ",") {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("%s: %s=%q: %v", c.Pos, k, c.Str(k, ""), err)
		}
		out = append(out, v)
	}
	return out
}

func (p *policy) at(t *testing.T, c datadriven.Cmd, k string) time.Time {
	return p.now.Add(c.Dur(t, k, 0))
}

func (p *policy) run(t *testing.T, c datadriven.Cmd) string {
	s := p.soft
	switch c.Name {
	// The clock.
	case "advance":
		p.now = p.now.Add(c.Dur(t, "by", 0))
		return "now " + rel(p.now)

	// Leases: a term's floor, grants, reads in flight, and what they
	// protect at the clock's now.
	case "begin-term":
		var floor time.Time
		if c.Has("floor") {
			floor = p.at(t, c, "floor")
		}
		s.BeginTerm(floor)
		return "floor " + rel(floor)
	case "grant":
		s.GrantLease(ref(c, t), p.at(t, c, "for"))
		return fmt.Sprintf("leases=%d keys=%d next-sweep=%d", len(s.leases), len(s.keyLeases), s.sweepAt)
	case "grant-many":
		for i := range c.Int(t, "n", 0) {
			s.GrantLease(api.ObjectRef{Key: fmt.Sprintf("%s%d", c.Need(t, "prefix"), i)}, p.at(t, c, "for"))
		}
		return fmt.Sprintf("leases=%d keys=%d next-sweep=%d", len(s.leases), len(s.keyLeases), s.sweepAt)
	case "begin-read":
		s.BeginRead(strings.Split(c.Need(t, "keys"), ",")...)
		return "ok"
	case "end-read":
		var refs []api.ObjectRef
		if c.Has("inc") {
			refs = append(refs, ref(c, t))
		}
		s.EndRead([]string{c.Need(t, "key")}, refs, p.at(t, c, "for"))
		return "ok"
	case "leased":
		r := ref(c, t)
		end := s.LeaseEnd(r, p.now)
		out := "incarnation: "
		if end.IsZero() {
			out += "free"
		} else {
			out += "leased until " + rel(end)
		}
		return out + fmt.Sprintf("; key: leased=%v", s.LeasedKey(r.Key, p.now))

	// Task delivery and retry backoff, per mount epoch.
	case "give":
		var tasks []api.LocalDeleteTask
		for _, id := range ints(t, c, "ids") {
			tasks = append(tasks, api.LocalDeleteTask{ID: id, Key: fmt.Sprintf("k%d", id)})
		}
		s.Given(tasks, uint64(c.Int(t, "epoch", 1)), p.now)
		return "ok"
	case "fail":
		for _, id := range ints(t, c, "ids") {
			s.TaskFailed(id, uint64(c.Int(t, "epoch", 1)), strings.ReplaceAll(c.Str("why", ""), "_", " "), p.now)
		}
		return "ok"
	case "done":
		for _, id := range ints(t, c, "ids") {
			s.TaskDone(id)
		}
		return "ok"
	case "withheld":
		var out []string
		for _, id := range ints(t, c, "ids") {
			task := api.LocalDeleteTask{ID: id, Key: c.Str("key", fmt.Sprintf("k%d", id)), Incarnation: api.ObjectIncarnation{High: 1, Low: uint64(c.Int(t, "inc", 1))}}
			held, until := s.Withheld(task, uint64(c.Int(t, "epoch", 1)), p.now)
			if held {
				out = append(out, fmt.Sprintf("%d: held until %s", id, rel(until)))
			} else {
				out = append(out, fmt.Sprintf("%d: given", id))
			}
		}
		return strings.Join(out, "\n")
	case "attempts":
		ids := ints(t, c, "ids")
		epochs := make([]uint64, len(ids))
		for i := range epochs {
			epochs[i] = uint64(c.Int(t, "epoch", 1))
		}
		var out []string
		for i, a := range s.AttemptsOf(ids, epochs) {
			line := fmt.Sprintf("%d: attempts=%d last=%s", ids[i], a.Attempts, rel(a.LastGiven))
			if a.Failing {
				line += fmt.Sprintf(" failing (%s)", a.LastErr)
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")

	// The revoke gate for abandoned puts.
	case "revoke-open":
		return fmt.Sprintf("open=%v", s.RevokeOpen(int(c.Int(t, "tasks", 0)), int(c.Int(t, "cap", 0)), p.now))
	case "revoke-full":
		s.RevokeFull(int(c.Int(t, "tasks", 0)), int(c.Int(t, "cap", 0)), p.now)
		return "closed until " + rel(s.revoke.until)
	case "revoke-done":
		s.RevokeDone()
		return "ok"

	// Placement: segments as the fsm lists them, heartbeats as holders
	// send them, and place's choice.
	case "segment":
		p.segs = append(p.segs, api.SegmentInfo{
			ID: api.SegmentID(c.Need(t, "id")), Pool: c.Str("pool", ""), Capacity: c.Int(t, "cap", 0),
			Mounted: !c.Has("unmounted"), Retired: c.Has("retired"),
		})
		return "ok"
	case "heartbeat":
		s.Heartbeat(api.SegmentID(c.Need(t, "seg")), c.Int(t, "used", 0), c.Int(t, "cap", 0), 0, p.at(t, c, "at"))
		return "ok"
	case "place":
		rng := rand.New(rand.NewPCG(uint64(c.Int(t, "seed", 1)), 0))
		ttl := c.Dur(t, "ttl", 10*time.Second)
		size, replicas := c.Int(t, "size", 1), int(c.Int(t, "replicas", 1))
		if n := c.Int(t, "draws", 0); n > 0 {
			// Many draws: how often each choice came up.
			counts := map[string]int{}
			for range n {
				got, err := Place(p.segs, s, ttl, p.now, size, replicas, c.Str("pool", ""), rng)
				counts[placed(got, err)]++
			}
			keys := make([]string, 0, len(counts))
			for k := range counts {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var out []string
			for _, k := range keys {
				out = append(out, fmt.Sprintf("%s: %d", k, counts[k]))
			}
			return strings.Join(out, "\n")
		}
		return placed(Place(p.segs, s, ttl, p.now, size, replicas, c.Str("pool", ""), rng))

	// Snapshot triggers and raft's log sizing.
	case "meter":
		p.meter.AppliedBytes.Store(uint64(c.Int(t, "applied", int64(p.meter.AppliedBytes.Load()))))
		p.meter.AppliedAtSnap.Store(uint64(c.Int(t, "at-snap", int64(p.meter.AppliedAtSnap.Load()))))
		p.meter.LastSnapBytes.Store(uint64(c.Int(t, "last-snap", int64(p.meter.LastSnapBytes.Load()))))
		return fmt.Sprintf("since-snapshot=%d", p.meter.SinceSnapshot())
	case "due":
		return fmt.Sprintf("due=%v", p.meter.Due(uint64(c.Int(t, "min", 0)), c.Float(t, "stagger", 1)))
	case "stagger":
		var out []string
		for _, id := range strings.Split(c.Need(t, "ids"), ",") {
			out = append(out, fmt.Sprintf("%s=%.3f", id, StaggerOf(id, strings.Split(c.Need(t, "voters"), ","))))
		}
		return strings.Join(out, " ")
	case "count-trigger":
		return strconv.FormatUint(CountTrigger(uint64(c.Int(t, "configured", 0)), uint64(c.Int(t, "last-snap", 0))), 10)
	case "trailing-count":
		return strconv.FormatUint(TrailingCount(uint64(c.Int(t, "configured", 0)), uint64(c.Int(t, "budget", 0)), c.Float(t, "avg", 0)), 10)
	case "log-sizing":
		cur := raft.ReloadableConfig{SnapshotThreshold: uint64(c.Int(t, "threshold", 0)), TrailingLogs: uint64(c.Int(t, "trailing", 0))}
		cfg := LogSizes{Threshold: uint64(c.Int(t, "cfg-threshold", 0)), Trailing: uint64(c.Int(t, "cfg-trailing", 0)), TrailingBytes: uint64(c.Int(t, "trailing-bytes", 0))}
		want, move := LogSizing(cur, cfg, uint64(c.Int(t, "last-snap", 0)), c.Float(t, "avg", 0))
		return fmt.Sprintf("threshold=%d trailing=%d reload=%v", want.SnapshotThreshold, want.TrailingLogs, move)

	// The DFS duties: read touches, file op retries, stray files, and
	// whether a put's DFS files are ready.
	case "dfs-read":
		desc := api.DFSDescriptor{UnitID: uint64(c.Int(t, "unit", 1)), Path: c.Need(t, "path"), Offset: c.Int(t, "offset", 0)}
		p.dfs.NoteRead(c.Need(t, "key"), []api.ReplicaDescriptor{{Kind: api.ReplicaDFS, DFS: &desc}, {Kind: api.ReplicaLocalDisk}}, p.now, c.Dur(t, "interval", 5*time.Second))
		return fmt.Sprintf("pending=%d remembered=%d", len(p.dfs.touches), len(p.dfs.touched))
	case "dfs-touches":
		var out []string
		for _, r := range p.dfs.TakeTouches(p.now, c.Dur(t, "interval", 5*time.Second)) {
			out = append(out, fmt.Sprintf("%s %s+%d", r.Key, r.Desc.Path, r.Desc.Offset))
		}
		return fmt.Sprintf("%s\nremembered=%d", strings.Join(append([]string{"touches:"}, out...), " "), len(p.dfs.touched))
	case "dfs-op-due":
		return fmt.Sprintf("due=%v", p.dfs.FileOpDue(uint64(c.Int(t, "unit", 1)), uint32(c.Int(t, "failures", 0)), p.now))
	case "dfs-op-done":
		p.dfs.FileOpDone(uint64(c.Int(t, "unit", 1)), c.Has("failed"), p.now)
		return "ok"
	case "dfs-strays":
		known := map[string]bool{}
		for _, k := range strings.Split(c.Str("known", ""), ",") {
			known[k] = k != ""
		}
		seen, due := p.dfs.ScanStrays(strings.Split(c.Str("names", ""), ","), known, p.now, c.Dur(t, "grace", 10*time.Second))
		out := "seen:" + strings.Join(append([]string{""}, seen...), " ") + "\ndue:"
		for _, st := range due {
			out += fmt.Sprintf(" %s (first %s)", st.Path, rel(st.FirstSeen))
		}
		out += "\nstrays:"
		for _, st := range p.dfs.Strays() {
			out += " " + st.Path
		}
		return out
	case "dfs-stray-removed":
		p.dfs.StrayRemoved(c.Need(t, "path"))
		return "ok"
	case "dfs-unready":
		var units []dfsalloc.UnitStats
		for _, u := range strings.Split(c.Need(t, "units"), ",") {
			id, file, _ := strings.Cut(u, ":")
			n, err := strconv.ParseUint(id, 10, 64)
			if err != nil {
				return c.Fail(t, err.Error())
			}
			st := dfsalloc.UnitStats{Unit: n, Path: "u" + id, File: dfsalloc.FileNeeded}
			if file == "ready" {
				st.File = dfsalloc.FileReady
			}
			units = append(units, st)
		}
		var reps []api.ReplicaDescriptor
		for _, id := range ints(t, c, "reps") {
			reps = append(reps, api.ReplicaDescriptor{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{UnitID: id, Path: fmt.Sprintf("u%d", id)}})
		}
		if f := UnreadyDFSFile(units, reps); f != "" {
			return "waiting for " + f
		}
		return "ready"

	// Readiness (/readyz).
	case "ready":
		f := ReadinessFacts{
			LeaderKnown: c.Has("leader-known"), Leading: c.Has("leading"), LeaderReady: c.Has("leader-ready"),
			Applied: uint64(c.Int(t, "applied", 0)), Commit: uint64(c.Int(t, "commit", 0)),
		}
		if c.Has("store-failing-for") {
			f.StoreCannotWrite = true
			f.StoreFailingSince = p.now.Add(-c.Dur(t, "store-failing-for", 0))
			f.StoreErr = errors.New(strings.ReplaceAll(c.Str("store-err", "write failed"), "_", " "))
		}
		ok, why := ReadyFor(f, p.now)
		if ok {
			return "ready"
		}
		return "not ready: " + strings.TrimSpace(why)
	}
	return c.Fail(t, "unknown command")
}

// placed renders place's answer: the segments chosen, or the error code.
func placed(got []api.SegmentInfo, err error) string {
	if err != nil {
		return "err=" + string(api.CodeOf(err))
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, string(s.ID)+"@"+s.Pool)
	}
	return strings.Join(ids, " ")
}
