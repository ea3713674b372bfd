package fsm

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"sexton/api"
	"sexton/snapshot"
)

// sessionView is a session frozen for a snapshot: the results are copied
// (the live slice is shifted in place); what they point to is immutable.
type sessionView struct {
	id      string
	floor   uint64
	active  int64
	results []sessResult
}

// views copies the table under the FSM's lock, in heap order (WriteTo
// sorts outside it). Every result goes into one arena, so the copy costs
// two allocations however many sessions there are.
func (t *sessionTable) views() []sessionView {
	out := make([]sessionView, 0, len(t.byID))
	arena := make([]sessResult, 0, t.results)
	for _, cs := range t.expiry { // every session, in a slice: faster than the map
		start := len(arena)
		arena = append(arena, cs.results...)
		out = append(out, sessionView{id: cs.id, floor: cs.floor, active: cs.lastActive, results: arena[start:len(arena):len(arena)]})
	}
	return out
}

// writeSessions writes one record per stored result (one without a result
// for a session that keeps none), by (client id, seq).
func (v *View) writeSessions(sw *snapshot.Writer) error {
	slices.SortFunc(v.sessions, func(a, b sessionView) int { return strings.Compare(a.id, b.id) })
	if err := sw.BeginSection(snapshot.SectionSessions); err != nil {
		return err
	}
	for _, s := range v.sessions {
		rec := snapshot.SessionRecord{ClientID: s.id, Floor: s.floor, LastActive: s.active}
		if len(s.results) == 0 {
			if err := sw.WriteRecord(&rec); err != nil {
				return fmt.Errorf("fsm: snapshot session %q: %w", s.id, err)
			}
		}
		for i := range s.results {
			rec.Result = s.results[i].record()
			if err := sw.WriteRecord(&rec); err != nil {
				return fmt.Errorf("fsm: snapshot session %q seq %d: %w", s.id, s.results[i].seq, err)
			}
		}
	}
	return sw.EndSection()
}

func (r *sessResult) record() *snapshot.SessionResult {
	out := &snapshot.SessionResult{Seq: r.seq, Kind: uint8(r.kind), Err: r.err, Inc: r.inc, Count: int64(r.count), Replicas: r.reps}
	if r.extra != nil {
		for _, it := range r.extra.items {
			out.Items = append(out.Items, snapshot.SessionItem{I: int64(it.i), Tasks: int64(it.tasks), Err: it.err, Replicas: it.reps})
		}
		if r.kind == CmdSettings {
			set := r.extra.settings
			out.Settings = &set
		}
	}
	return out
}

// sessionRestore rebuilds the session table from 1.2.0 records, checking
// that they describe a table Apply could have produced.
type sessionRestore struct {
	t    *sessionTable
	cur  *clientSession // the session the last record belonged to
	bare bool           // cur's record had no result
}

func (b *restoreSink) session(r *snapshot.SessionRecord) error {
	if !hasSessions(b.format) {
		return corrupt("session record in a %s snapshot", b.format)
	}
	if !b.haveState {
		return corrupt("session record before the state record")
	}
	sr := &b.sessions
	if sr.t == nil {
		sr.t = b.st.sess
	}
	t := sr.t
	if r.LastActive > t.clock {
		return corrupt("session %q active at %d, after the session clock %d", r.ClientID, r.LastActive, t.clock)
	}
	cs := sr.cur
	switch {
	case cs != nil && r.ClientID == cs.id:
		if r.Floor != cs.floor || r.LastActive != cs.lastActive {
			return corrupt("session %q: records disagree on floor or last activity", r.ClientID)
		}
		if sr.bare || r.Result == nil {
			return corrupt("session %q: a record without a result among others", r.ClientID)
		}
	case cs != nil && r.ClientID < cs.id:
		return corrupt("session %q out of order after %q", r.ClientID, cs.id)
	default:
		if len(t.byID) >= MaxMaxSessions {
			return corrupt("more than %d client sessions", MaxMaxSessions)
		}
		cs = &clientSession{id: r.ClientID, floor: r.Floor, lastActive: r.LastActive}
		t.byID[cs.id] = cs
		cs.heapIdx = len(t.expiry)
		t.expiry = append(t.expiry, cs) // heap.Init in finish
		t.bytes += sessionCost(cs.id)
		sr.cur, sr.bare = cs, r.Result == nil
		if r.Result == nil {
			return nil
		}
	}
	res, err := resultOf(cs, r.Result)
	if err != nil {
		return err
	}
	if len(cs.results) >= MaxMaxSessionResults {
		return corrupt("session %q keeps more than %d results", cs.id, MaxMaxSessionResults)
	}
	cs.results = append(cs.results, res)
	t.results++
	t.bytes += resultCost(&cs.results[len(cs.results)-1])
	return nil
}

// resultOf converts and checks one stored result of cs.
func resultOf(cs *clientSession, r *snapshot.SessionResult) (sessResult, error) {
	bad := func(format string, args ...any) (sessResult, error) {
		return sessResult{}, corrupt("session %q seq %d: %s", cs.id, r.Seq, fmt.Sprintf(format, args...))
	}
	if r.Seq == 0 || r.Seq < cs.floor {
		return bad("below the floor %d", cs.floor)
	}
	if n := len(cs.results); n > 0 && r.Seq <= cs.results[n-1].seq {
		return bad("out of order after seq %d", cs.results[n-1].seq)
	}
	kind := CommandType(r.Kind)
	out := sessResult{seq: r.Seq, kind: kind, err: r.Err, inc: r.Inc, count: int32(r.Count), reps: r.Replicas}
	if kind != CmdPutStart && kind != CmdPutStartBatch && kind != CmdJobStart && !r.Inc.IsZero() {
		return bad("an incarnation in a %s result", kind)
	}
	if kind != CmdPutStart && len(r.Replicas) != 0 {
		return bad("replicas in a %s result", kind)
	}
	if (kind == CmdSettings) != (r.Settings != nil) {
		return bad("settings in a %s result, or a settings result without them", kind)
	}
	switch kind {
	case CmdPutStart, CmdPutEnd, CmdPutRevoke, CmdPutCommit:
		if len(r.Items) != 0 || (kind == CmdPutStart && r.Count != 0) {
			return bad("items or a count in a %s result", kind)
		}
	case CmdJobStart, CmdJobCancel:
		// JobStart keeps the job's id (jobStartAnswer; or, in older
		// snapshots, its start incarnation: storedJobID); JobCancel only
		// its error.
		if len(r.Items) != 0 || r.Count != 0 || (kind == CmdJobStart && (r.Inc.IsZero() != (r.Err != nil))) {
			return bad("items, a count or a missing job in a %s result", kind)
		}
	case CmdSettings:
		if len(r.Items) != 0 || r.Count != 0 {
			return bad("items in a settings result")
		}
		out.extra = &resultExtra{settings: *r.Settings}
		return out, nil
	case CmdRemove:
		if r.Count < 0 || r.Count > api.MaxBatchKeys || len(r.Items) > int(r.Count) {
			return bad("%d failed keys of %d", len(r.Items), r.Count)
		}
		last := int64(-1)
		for _, it := range r.Items {
			if it.I <= last || it.I >= r.Count || it.Err == nil || it.Tasks != 0 || len(it.Replicas) != 0 {
				return bad("bad per-key result %d", it.I)
			}
			last = it.I
		}
	case CmdPutStartBatch, CmdPutEndBatch, CmdPutCommitBatch:
		if r.Count > MaxBatchPutItems || len(r.Items) != int(r.Count) {
			return bad("%d items of %d", len(r.Items), r.Count)
		}
		for i, it := range r.Items {
			if it.I != int64(i) || (kind != CmdPutStartBatch && len(it.Replicas) != 0) || (kind == CmdPutStartBatch && it.Tasks != 0) ||
				it.Tasks < 0 || it.Tasks > api.MaxReplicas {
				return bad("bad item %d", i)
			}
		}
	default:
		return bad("unknown kind %d", r.Kind)
	}
	if kind == CmdPutEnd || kind == CmdPutRevoke || kind == CmdPutCommit {
		if r.Count < 0 || r.Count > api.MaxReplicas {
			return bad("%d tasks", r.Count)
		}
	}
	if len(r.Items) > 0 {
		out.extra = &resultExtra{items: make([]itemResult, len(r.Items))}
		for i, it := range r.Items {
			out.extra.items[i] = itemResult{i: int32(it.I), tasks: int32(it.Tasks), err: it.Err, reps: it.Replicas}
		}
	}
	return out, nil
}

// finishSessions orders the restored sessions for expiry.
func (b *restoreSink) finishSessions() {
	if b.sessions.t != nil {
		heap.Init(&b.sessions.t.expiry)
	}
}
