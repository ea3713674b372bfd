package policy

import (
	"sync"
	"time"

	"sexton/api"
)

// State is what only the leader knows and a new leader rebuilds:
// which holders are alive (from heartbeats), which incarnations are under a
// read lease, and which delete tasks are backing off after failures. None
// of it is replicated; a failover resets it, and the new leader compensates
// by treating every incarnation as leased for one period.
type State struct {
	mu      sync.Mutex
	holders map[api.SegmentID]holderLiveness
	// leases holds, per incarnation, the end of its read lease; keyLeases
	// the latest end over a key's incarnations (DFS eviction knows keys
	// only).
	leases    map[api.ObjectRef]time.Time
	keyLeases map[string]time.Time
	// reading counts the Gets of a key between their fsm read and their
	// lease grant: a task of the key fetched in that window could delete
	// the incarnation the Get is about to answer.
	reading    map[string]int
	leaseFloor time.Time // every incarnation is leased until this instant
	sweepAt    int       // sweep expired leases when the map reaches this size

	retries      map[uint64]taskRetry // task id → deliveries and backoff
	retrySweepAt int

	revoke revokeGate

	// clock is the time the lease sweep measures expiry against, the
	// one decision here that no caller hands a time to; tests set it.
	clock func() time.Time

	// DropMu orders lease grants against replica drops: a Get holds it
	// shared from its fsm read to its lease grant, an eviction exclusively
	// from its lease check until its drop is applied, so no Get can answer
	// a replica between an eviction's check and its drop.
	DropMu sync.RWMutex
}

// minLeaseSweep is the lease-map size below which expired leases are not
// swept at all; minRetrySweep the same for task backoffs.
const (
	minLeaseSweep = 1 << 16
	minRetrySweep = 1 << 12
)

// A task that failed (acked RetryableFailure, or fetched again without an
// answer) is withheld from fetches for RetryBackoffMin, doubling with
// every further failure up to retryBackoffMax, so failing tasks do not
// hide the ones behind them.
const (
	RetryBackoffMin = 500 * time.Millisecond
	retryBackoffMax = 30 * time.Second
)

// readingRetry is how soon a fetch looks again at a task withheld because
// a Get of its key is between its read and its lease grant.
const readingRetry = 5 * time.Millisecond

type holderLiveness struct {
	lastSeen  time.Time
	used      int64
	capacity  int64
	deadBytes int64
}

// taskRetry is one task's delivery state for the mount epoch it was last
// Given to: a new mount (another process) starts without it.
type taskRetry struct {
	epoch    uint64
	failures int
	until    time.Time // backoff end
	// given is when the task was last handed to the mount and neither
	// acked nor reported failed since; zero when nothing is outstanding.
	given time.Time
	// attempts, lastGiven and lastErr describe the task for ListTasks
	// across mounts: deliveries this term, the last of them, and why the
	// last failed one failed ("" when it has not failed in this mount).
	attempts  int
	lastGiven time.Time
	lastErr   string
}

// renew is r for the mount at epoch: a new mount starts without backoff
// and without the old mount's error, but its deliveries still count.
func (r taskRetry) renew(epoch uint64) taskRetry {
	if r.epoch == epoch {
		return r
	}
	return taskRetry{epoch: epoch, attempts: r.attempts, lastGiven: r.lastGiven}
}

// TaskAttempts is what ListTasks shows of one task's deliveries.
type TaskAttempts struct {
	Attempts  int
	LastGiven time.Time
	LastErr   string // set only while it is the current mount's
	Failing   bool   // the last attempt at the current mount failed
}

// NewState is a term's soft state before its first heartbeat.
func NewState() *State {
	s := &State{holders: map[api.SegmentID]holderLiveness{}, reading: map[string]int{}, clock: time.Now}
	s.reset()
	return s
}

// reset forgets everything a term learnt (callers hold mu or own s).
func (s *State) reset() {
	s.leases = map[api.ObjectRef]time.Time{}
	s.keyLeases = map[string]time.Time{}
	s.sweepAt = minLeaseSweep
	s.retries = map[uint64]taskRetry{}
	s.retrySweepAt = minRetrySweep
	s.revoke = revokeGate{}
}

// BeginTerm forgets the last term and leases every incarnation until
// leaseFloor.
func (s *State) BeginTerm(leaseFloor time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holders = map[api.SegmentID]holderLiveness{}
	s.reset()
	s.leaseFloor = leaseFloor
}

// Heartbeat records what the holder of seg reported at now.
func (s *State) Heartbeat(seg api.SegmentID, used, capacity, dead int64, now time.Time) {
	s.mu.Lock()
	s.holders[seg] = holderLiveness{lastSeen: now, used: used, capacity: capacity, deadBytes: dead}
	s.mu.Unlock()
}

// Forget drops the holder of seg (unmounted).
func (s *State) Forget(seg api.SegmentID) {
	s.mu.Lock()
	delete(s.holders, seg)
	s.mu.Unlock()
}

// HeartbeatAges is, per holder this term knows, the time since its last
// heartbeat (a holder mounted when the term began counts from then).
func (s *State) HeartbeatAges(now time.Time) map[api.SegmentID]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[api.SegmentID]time.Duration, len(s.holders))
	for seg, h := range s.holders {
		out[seg] = now.Sub(h.lastSeen)
	}
	return out
}

// Live reports whether the holder of seg sent a heartbeat within ttl of
// now.
func (s *State) Live(seg api.SegmentID, ttl time.Duration, now time.Time) bool {
	_, ok := s.live(seg, ttl, now)
	return ok
}

// LeaseFloor is the instant until which the term leases every
// incarnation.
func (s *State) LeaseFloor() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseFloor
}

func (s *State) live(seg api.SegmentID, ttl time.Duration, now time.Time) (holderLiveness, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holders[seg]
	return h, ok && now.Sub(h.lastSeen) <= ttl
}

// BeginRead marks keys as being read. Call it before reading the fsm and
// EndRead after; in between, tasks of those keys are withheld.
func (s *State) BeginRead(keys ...string) {
	s.mu.Lock()
	for _, k := range keys {
		s.reading[k]++
	}
	s.mu.Unlock()
}

// EndRead grants a read lease until until on each incarnation read (refs
// may be fewer than keys: keys not found lease nothing) and ends the reads
// BeginRead marked.
func (s *State) EndRead(keys []string, refs []api.ObjectRef, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range refs {
		s.grantLocked(r, until)
	}
	for _, k := range keys {
		if s.reading[k]--; s.reading[k] <= 0 {
			delete(s.reading, k)
		}
	}
}

// GrantLease leases one incarnation until until.
func (s *State) GrantLease(ref api.ObjectRef, until time.Time) {
	s.mu.Lock()
	s.grantLocked(ref, until)
	s.mu.Unlock()
}

func (s *State) grantLocked(ref api.ObjectRef, until time.Time) {
	if until.After(s.leases[ref]) {
		s.leases[ref] = until
	}
	if until.After(s.keyLeases[ref.Key]) {
		s.keyLeases[ref.Key] = until
	}
	// Sweep expired leases when the map has doubled since the last sweep,
	// so the cost is amortized over the Gets that grew it (a fixed
	// threshold would rescan the whole map on every Get once that many
	// leases are live at once).
	if len(s.leases) >= s.sweepAt {
		now := s.clock()
		for r, t := range s.leases {
			if t.Before(now) {
				delete(s.leases, r)
			}
		}
		for k, t := range s.keyLeases {
			if t.Before(now) {
				delete(s.keyLeases, k)
			}
		}
		s.sweepAt = max(2*len(s.leases), minLeaseSweep)
	}
}

// leaseEndLocked is when ref stops being protected from deletion and eviction
// at now: the latest of the term's floor, its own lease, and, while a Get
// of its key is in flight, shortly after now. Zero: not protected.
func (s *State) leaseEndLocked(ref api.ObjectRef, now time.Time) time.Time {
	var end time.Time
	if now.Before(s.leaseFloor) {
		end = s.leaseFloor
	}
	if t := s.leases[ref]; now.Before(t) && t.After(end) {
		end = t
	}
	if s.reading[ref.Key] > 0 && end.IsZero() {
		end = now.Add(readingRetry)
	}
	return end
}

// LeaseEnd is leaseEndLocked for callers that do not hold mu.
func (s *State) LeaseEnd(ref api.ObjectRef, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseEndLocked(ref, now)
}

// Leased reports whether ref is under a read lease at now.
func (s *State) Leased(ref api.ObjectRef, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.leaseEndLocked(ref, now).IsZero()
}

// LeasedKey reports whether any incarnation of key is under a read lease
// at now.
func (s *State) LeasedKey(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Before(s.leaseFloor) || now.Before(s.keyLeases[key]) || s.reading[key] > 0
}

// Withheld reports whether task t may not be given to the holder mounted
// at epoch now, and until when: its incarnation is leased (a reader may
// still be reading that copy), or the task is backing off after failures.
//
// A holder fetches again only after answering what it fetched (its loop
// is fetch, tombstone, ack), so a task it was given and fetches again
// without an ack or a RetryableFailure in between failed silently (the
// holder does not ack failures): it backs off as if reported.
func (s *State) Withheld(t api.LocalDeleteTask, epoch uint64, now time.Time) (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.leaseEndLocked(api.ObjectRef{Key: t.Key, Incarnation: t.Incarnation}, now)
	r, ok := s.retries[t.ID]
	if ok && r.epoch == epoch && !r.given.IsZero() {
		r = s.failLocked(t.ID, epoch, "fetched again without an answer", now)
	}
	if ok && r.epoch == epoch && now.Before(r.until) && r.until.After(end) {
		end = r.until
	}
	return !end.IsZero(), end
}

// Given records that tasks were handed to the holder mounted at epoch.
func (s *State) Given(tasks []api.LocalDeleteTask, epoch uint64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		r := s.retries[t.ID].renew(epoch)
		r.given = now
		r.lastGiven = now
		r.attempts++
		s.retries[t.ID] = r
	}
	s.sweepRetriesLocked(now)
}

// TaskFailed backs task id off after a RetryableFailure reported by the
// holder mounted at epoch, and keeps why.
func (s *State) TaskFailed(id, epoch uint64, why string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(id, epoch, why, now)
}

func (s *State) failLocked(id, epoch uint64, why string, now time.Time) taskRetry {
	r := s.retries[id].renew(epoch)
	if why == "" {
		why = "holder reported a retryable failure"
	}
	r.lastErr = why
	r.failures++
	r.given = time.Time{}
	d := RetryBackoffMin << min(r.failures-1, 16)
	r.until = now.Add(min(d, retryBackoffMax))
	s.retries[id] = r
	return r
}

// sweepRetriesLocked forgets, once the map has doubled, entries whose
// backoff and delivery both lie longer than the longest backoff back: the
// task is gone (acked under another leader, retired) or its holder went
// quiet. Forgetting costs at most one missed backoff.
func (s *State) sweepRetriesLocked(now time.Time) {
	if len(s.retries) < s.retrySweepAt {
		return
	}
	for id, r := range s.retries {
		if now.Sub(r.until) > retryBackoffMax && now.Sub(r.given) > retryBackoffMax {
			delete(s.retries, id)
		}
	}
	s.retrySweepAt = max(2*len(s.retries), minRetrySweep)
}

// AttemptsOf is what this term knows of each task's deliveries; a task
// is failing when its last attempt at the mount at epochs[i] failed.
func (s *State) AttemptsOf(ids []uint64, epochs []uint64) []TaskAttempts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskAttempts, len(ids))
	for i, id := range ids {
		r, ok := s.retries[id]
		if !ok {
			continue
		}
		out[i] = TaskAttempts{Attempts: r.attempts, LastGiven: r.lastGiven}
		if r.epoch == epochs[i] && r.failures > 0 {
			out[i].LastErr, out[i].Failing = r.lastErr, true
		}
	}
	return out
}

// TaskDone forgets a task that ended.
func (s *State) TaskDone(id uint64) {
	s.mu.Lock()
	delete(s.retries, id)
	s.mu.Unlock()
}

// revokeGate holds back the discard of abandoned puts while the delete
// registry has no room for their tasks: a refused PutRevoke would be
// proposed again every tick for every abandoned put.
type revokeGate struct {
	until    time.Time // no revoke before this, unless room appeared
	tasks    int       // pending tasks when the registry was last full
	capacity int       // registry capacity then
	failures int
}

// Revocation refused for a full registry is retried after
// revokeBackoffMin, doubling up to revokeBackoffMax, or as soon as the
// registry holds fewer tasks or has more capacity than when it refused.
const (
	revokeBackoffMin = time.Second
	revokeBackoffMax = time.Minute
)

// RevokeOpen reports whether abandoned puts may be revoked now, given the
// registry's pending tasks and capacity.
func (s *State) RevokeOpen(tasks, capacity int, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.revoke
	return g.failures == 0 || !now.Before(g.until) || tasks < g.tasks || capacity > g.capacity
}

// RevokeFull records that a revoke was refused for a full registry.
func (s *State) RevokeFull(tasks, capacity int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &s.revoke
	g.failures++
	g.tasks, g.capacity = tasks, capacity
	g.until = now.Add(min(revokeBackoffMin<<min(g.failures-1, 16), revokeBackoffMax))
}

// RevokeFailures is how many revokes the gate has refused in a row.
func (s *State) RevokeFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revoke.failures
}

// RevokeDone reopens the gate after a revoke went through.
func (s *State) RevokeDone() {
	s.mu.Lock()
	s.revoke = revokeGate{}
	s.mu.Unlock()
}
