package fsm

import (
	"container/heap"
	"sort"

	"sexton/api"
)

// Client sessions (the Raft dissertation's §6.3): the state remembers,
// per client id, the results of its recent mutating requests, so a repeat
// of a request (same client id and sequence number) is answered with the
// first result and executes nothing (invariant 10). Everything here is
// decided by the log: the time is the entries' Now (kept non-decreasing),
// the bounds are the replicated settings, and expiry order is (last
// active, client id), never map order.

// sweepBudget bounds how many expired sessions one entry drops, so a mass
// expiry is spread over many entries instead of stalling one. An expired
// session still in the table is treated as absent when its client returns,
// so the budget changes memory, never an answer.
const sweepBudget = 64

// maxStoredMessage bounds the message of a request's error kept in the
// session table, maxItemMessage that of one key's or one item's (the key
// is in the answer anyway). The first answer gets the same shortened
// error, so a repeat is answered exactly as the first time.
const (
	maxStoredMessage = 1024
	maxItemMessage   = 128
)

// maxStoredResult bounds the snapshot encoding of one stored result, so
// every session record fits a snapshot chunk (1 MiB). A result estimated
// larger (only a batch whose replicas carry very long DFS paths can be) is
// not kept: its repeat is answered OUTCOME_UNKNOWN.
const maxStoredResult = 900 << 10

// clientSession is one client's record.
type clientSession struct {
	id string
	// floor: every seq below it is forgotten; a request below it is
	// answered OUTCOME_UNKNOWN.
	floor      uint64
	lastActive int64        // session clock when the client was last seen
	results    []sessResult // ordered by seq, all ≥ floor
	heapIdx    int
}

// sessResult is one stored answer, compact: only what is needed to answer
// the request again. Which fields are used depends on kind.
type sessResult struct {
	seq   uint64
	inc   api.ObjectIncarnation   // PutStart, PutStartBatch (every started item); JobStart: the job id (jobStartAnswer)
	err   *api.Error              // the whole request's error
	reps  []api.ReplicaDescriptor // PutStart; shared with the object, immutable
	extra *resultExtra            // per-item results, settings; nil when not needed
	count int32                   // Remove: keys; PutEnd/PutRevoke: tasks; batches: items
	kind  CommandType
}

// resultExtra holds the rarer parts of a stored result.
type resultExtra struct {
	// items: Remove: the failed keys only (i = position in the span);
	// PutStartBatch and PutEndBatch: every item, in order.
	items    []itemResult
	settings api.Settings // Settings
}

// items returns r's per-item results (none when r has no extra part).
func (r *sessResult) items() []itemResult {
	if r.extra == nil {
		return nil
	}
	return r.extra.items
}

type itemResult struct {
	i     int32
	tasks int32
	err   *api.Error
	reps  []api.ReplicaDescriptor
}

// sessionTable holds every client session.
type sessionTable struct {
	byID   map[string]*clientSession
	expiry sessionHeap // min (lastActive, id) first
	// clock is the largest entry Now seen: a new leader whose clock is
	// behind cannot make sessions younger or expiry go backwards.
	clock   int64
	results int   // stored results over all sessions
	bytes   int64 // approximate heap held (see sessionCost, resultCost)
}

func newSessionTable() *sessionTable {
	return &sessionTable{byID: make(map[string]*clientSession)}
}

// Approximate heap cost of the table's parts, measured by
// BenchmarkSessionHeap (DESIGN.md, "Client sessions"): a session is its
// struct, its map slot, its heap slot and its id; a result is its slot in
// the session's slice (amortised growth) plus what it points to.
const (
	sessionOverhead = 128
	resultOverhead  = 80
	itemOverhead    = 48
	errorOverhead   = 48
)

func sessionCost(id string) int64 { return sessionOverhead + int64(len(id)) }

func errCost(e *api.Error) int64 {
	if e == nil {
		return 0
	}
	return errorOverhead + int64(len(e.Code)+len(e.Message)+len(e.Leader))
}

func resultCost(r *sessResult) int64 {
	n := resultOverhead + errCost(r.err)
	if r.extra != nil {
		n += 64
		for i := range r.extra.items {
			n += itemOverhead + errCost(r.extra.items[i].err)
		}
	}
	return n
}

func (t *sessionTable) advance(now int64) {
	if now > t.clock {
		t.clock = now
	}
}

func (t *sessionTable) expired(cs *clientSession, ttlNanos int64) bool {
	return t.clock-cs.lastActive > ttlNanos
}

func (t *sessionTable) add(id string, floor uint64) *clientSession {
	cs := &clientSession{id: id, floor: floor, lastActive: t.clock}
	t.byID[id] = cs
	heap.Push(&t.expiry, cs)
	t.bytes += sessionCost(id)
	return cs
}

func (t *sessionTable) remove(cs *clientSession) {
	heap.Remove(&t.expiry, cs.heapIdx)
	delete(t.byID, cs.id)
	t.results -= len(cs.results)
	t.bytes -= sessionCost(cs.id)
	for i := range cs.results {
		t.bytes -= resultCost(&cs.results[i])
	}
}

// sweep drops up to budget sessions idle longer than the TTL, oldest first.
func (t *sessionTable) sweep(ttlNanos int64, budget int) {
	for ; budget > 0 && len(t.expiry) > 0; budget-- {
		oldest := t.expiry[0]
		if !t.expired(oldest, ttlNanos) {
			return
		}
		t.remove(oldest)
	}
}

func (t *sessionTable) touch(cs *clientSession) {
	if cs.lastActive != t.clock {
		cs.lastActive = t.clock
		heap.Fix(&t.expiry, cs.heapIdx)
	}
}

// forgetBelow drops cs's results with seq < floor and raises its floor.
func (t *sessionTable) forgetBelow(cs *clientSession, floor uint64) {
	if floor <= cs.floor {
		return
	}
	cs.floor = floor
	n := 0
	for n < len(cs.results) && cs.results[n].seq < floor {
		n++
	}
	t.dropOldest(cs, n)
}

// dropOldest forgets cs's n lowest results (the floor is the caller's).
func (t *sessionTable) dropOldest(cs *clientSession, n int) {
	if n == 0 {
		return
	}
	for i := 0; i < n; i++ {
		t.bytes -= resultCost(&cs.results[i])
	}
	t.results -= n
	// Copy down rather than reslice: the slice keeps its capacity, so a
	// client with one request at a time never allocates a new one.
	m := copy(cs.results, cs.results[n:])
	clear(cs.results[m:])
	cs.results = cs.results[:m]
}

func (cs *clientSession) find(seq uint64) (int, bool) {
	i := sort.Search(len(cs.results), func(i int) bool { return cs.results[i].seq >= seq })
	return i, i < len(cs.results) && cs.results[i].seq == seq
}

// store keeps r (whose seq is not stored yet and is ≥ the floor); past
// maxResults the oldest results are forgotten and the floor raised above
// them.
func (t *sessionTable) store(cs *clientSession, r sessResult, maxResults int) {
	i, _ := cs.find(r.seq)
	cs.results = append(cs.results, sessResult{})
	copy(cs.results[i+1:], cs.results[i:])
	cs.results[i] = r
	t.results++
	t.bytes += resultCost(&r)
	if over := len(cs.results) - maxResults; over > 0 {
		cs.floor = cs.results[over-1].seq + 1
		t.dropOldest(cs, over)
	}
}

// sessionHeap orders sessions by (lastActive, id): a total order, so the
// sessions a sweep drops do not depend on how the heap was built (applied
// or restored).
type sessionHeap []*clientSession

func (h sessionHeap) Len() int { return len(h) }
func (h sessionHeap) Less(i, j int) bool {
	if h[i].lastActive != h[j].lastActive {
		return h[i].lastActive < h[j].lastActive
	}
	return h[i].id < h[j].id
}
func (h sessionHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *sessionHeap) Push(x any) {
	cs := x.(*clientSession)
	cs.heapIdx = len(*h)
	*h = append(*h, cs)
}
func (h *sessionHeap) Pop() any {
	old := *h
	cs := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	cs.heapIdx = -1
	return cs
}

// sessionGate is what the session table says about one request before it
// executes.
type sessionGate struct {
	cs   *clientSession // nil: no session; execute and store nothing
	seq  uint64
	prev *sessResult // a stored answer: return it, execute nothing
	err  *api.Error  // answer this, execute nothing
	dup  bool        // the answer comes from the session table
}

// sessionBegin checks a request's session before it executes: a stored
// answer is returned; a forgotten one is OUTCOME_UNKNOWN; a new client
// while the table is full of live sessions is refused (UNAVAILABLE). In
// every other case the request executes and its result is then stored
// with sessionEnd.
func (st *state) sessionBegin(kind CommandType, s api.Session, now int64) sessionGate {
	if s.IsZero() {
		if s.Seq != 0 || s.Floor != 0 {
			return sessionGate{err: api.Errorf(api.CodeInvalidParams, "session: sequence number without a client id")}
		}
		return sessionGate{}
	}
	if err := s.Valid(); err != nil {
		return sessionGate{err: api.AsError(err)}
	}
	t := st.sess
	t.advance(now)
	st.expireBlocks(t.clock)
	set := st.effectiveSettings()
	ttl := set.SessionTTLMillis * 1e6
	cs := t.byID[s.ClientID]
	if cs != nil && t.expired(cs, ttl) {
		t.remove(cs) // gone, whether or not a sweep got to it yet
		cs = nil
	}
	if cs == nil {
		if len(t.byID) >= set.MaxSessions {
			t.sweep(ttl, sweepBudget)
		}
		if len(t.byID) >= set.MaxSessions {
			return sessionGate{err: api.Errorf(api.CodeUnavailable, "session table full: %d client sessions active within the last %d ms; client %q refused", len(t.byID), set.SessionTTLMillis, s.ClientID)}
		}
		cs = t.add(s.ClientID, s.Floor)
	}
	t.touch(cs)
	t.forgetBelow(cs, s.Floor)
	if i, ok := cs.find(s.Seq); ok {
		r := &cs.results[i]
		if r.kind != kind {
			return sessionGate{err: api.Errorf(api.CodeInvalidParams, "session: client %q seq %d was a %s, repeated as a %s", s.ClientID, s.Seq, r.kind, kind)}
		}
		return sessionGate{prev: r, dup: true}
	}
	if s.Seq < cs.floor {
		return sessionGate{dup: true, err: api.Errorf(api.CodeOutcomeUnknown, "session: client %q seq %d is below its floor %d: its result was forgotten", s.ClientID, s.Seq, cs.floor)}
	}
	return sessionGate{cs: cs, seq: s.Seq}
}

// sessionEnd stores the result of a request that executed under g.
func (st *state) sessionEnd(g *sessionGate, r sessResult) {
	if g.cs == nil {
		return
	}
	r.seq = g.seq
	if encodedSize(&r) > maxStoredResult {
		r = sessResult{seq: r.seq, kind: r.kind, count: r.count,
			err: api.Errorf(api.CodeOutcomeUnknown, "session: the result of seq %d was too large to keep", r.seq)}
	}
	st.sess.store(g.cs, r, st.effectiveSettings().MaxSessionResults)
}

// encodedSize bounds from above the bytes r takes in a snapshot record.
func encodedSize(r *sessResult) int {
	n := 128 + errSize(r.err) + repsSize(r.reps)
	if r.extra != nil {
		n += 64
		for i := range r.extra.items {
			n += 48 + errSize(r.extra.items[i].err) + repsSize(r.extra.items[i].reps)
		}
	}
	return n
}

func errSize(e *api.Error) int {
	if e == nil {
		return 0
	}
	return 32 + len(e.Code) + len(e.Message) + len(e.Leader)
}

func repsSize(rs []api.ReplicaDescriptor) int {
	n := 0
	for _, r := range rs {
		n += 48 + len(r.Segment) + len(r.Pool)
		if r.DFS != nil {
			n += 96 + len(r.DFS.Allocator) + len(r.DFS.Path)
		}
	}
	return n
}

// tick advances the session clock to an entry's time and sweeps a bounded
// number of expired sessions.
func (st *state) tick(now int64) {
	t := st.sess
	t.advance(now)
	if len(t.expiry) > 0 {
		t.sweep(st.effectiveSettings().SessionTTLMillis*1e6, sweepBudget)
	}
}

// storedErr returns a request's error shortened for the session table;
// the first answer uses the same value, so a repeat gets exactly the first
// answer.
func storedErr(e *api.Error) *api.Error { return shortened(e, maxStoredMessage) }

// storedItemErr is storedErr for one key's or one item's error.
func storedItemErr(e *api.Error) *api.Error { return shortened(e, maxItemMessage) }

func shortened(e *api.Error, limit int) *api.Error {
	if e == nil || len(e.Message) <= limit {
		return e
	}
	return &api.Error{Code: e.Code, Message: e.Message[:limit] + "...", Leader: e.Leader}
}

// SessionStats describes the client session table (the exactly-once
// dedup state).
type SessionStats struct {
	// Clients is the number of client sessions kept, Results the number of
	// stored results over all of them.
	Clients, Results int
	// Bytes approximates the heap the table holds (see DESIGN.md, "Client
	// sessions", for what one session and one result cost).
	Bytes int64
}

// SessionStats summarises the session table.
func (f *FSM) SessionStats() SessionStats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t := f.st.sess
	return SessionStats{Clients: len(t.byID), Results: t.results, Bytes: t.bytes}
}
