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
// by treating every incarnation as leased for one period. Its read leases
// are in leases.go, the task backoff in backoff.go, the revoke gate in
// revoke.go.
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

type holderLiveness struct {
	lastSeen  time.Time
	used      int64
	capacity  int64
	deadBytes int64
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
