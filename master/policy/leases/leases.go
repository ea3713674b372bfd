package leases

import (
	"sync"
	"time"

	"sexton/api"
)

// Table is the leader's read leases: per incarnation the end of its read
// lease, per key the latest end over its incarnations (DFS eviction knows
// keys only), the Gets in flight between their fsm read and their lease
// grant, and the term's lease floor. None of it is replicated; a new
// leader compensates by leasing every incarnation until the floor. The
// zero Table is not usable: make one with New.
type Table struct {
	mu        sync.Mutex
	leases    map[api.ObjectRef]time.Time
	keyLeases map[string]time.Time
	// reading counts the Gets of a key between their fsm read and their
	// lease grant: a task of the key fetched in that window could delete
	// the incarnation the Get is about to answer.
	reading    map[string]int
	leaseFloor time.Time // every incarnation is leased until this instant
	sweepAt    int       // sweep expired leases when the map reaches this size

	// clock is the time the lease sweep measures expiry against, the
	// one decision here that no caller hands a time to; tests set it.
	clock func() time.Time
}

// minLeaseSweep is the lease-map size below which expired leases are not
// swept at all.
const minLeaseSweep = 1 << 16

// readingRetry is how soon a fetch looks again at a task withheld because
// a Get of its key is between its read and its lease grant.
const readingRetry = 5 * time.Millisecond

// New is a term's lease table before its first grant, with no floor.
func New() *Table {
	t := &Table{reading: map[string]int{}, clock: time.Now}
	t.BeginTerm(time.Time{})
	return t
}

// BeginTerm forgets the last term's leases and leases every incarnation
// until leaseFloor. Reads in flight stay marked: their EndRead comes.
func (s *Table) BeginTerm(leaseFloor time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases = map[api.ObjectRef]time.Time{}
	s.keyLeases = map[string]time.Time{}
	s.sweepAt = minLeaseSweep
	s.leaseFloor = leaseFloor
}

// LeaseFloor is the instant until which the term leases every
// incarnation.
func (s *Table) LeaseFloor() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseFloor
}

// BeginRead marks keys as being read. Call it before reading the fsm and
// EndRead after; in between, tasks of those keys are withheld.
func (s *Table) BeginRead(keys ...string) {
	s.mu.Lock()
	for _, k := range keys {
		s.reading[k]++
	}
	s.mu.Unlock()
}

// EndRead grants a read lease until until on each incarnation read (refs
// may be fewer than keys: keys not found lease nothing) and ends the reads
// BeginRead marked.
func (s *Table) EndRead(keys []string, refs []api.ObjectRef, until time.Time) {
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
func (s *Table) GrantLease(ref api.ObjectRef, until time.Time) {
	s.mu.Lock()
	s.grantLocked(ref, until)
	s.mu.Unlock()
}

func (s *Table) grantLocked(ref api.ObjectRef, until time.Time) {
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

// LeaseEnd is when ref stops being protected from deletion and eviction
// at now: the latest of the term's floor, its own lease, and, while a Get
// of its key is in flight, shortly after now. Zero: not protected.
func (s *Table) LeaseEnd(ref api.ObjectRef, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
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

// Leased reports whether ref is under a read lease at now.
func (s *Table) Leased(ref api.ObjectRef, now time.Time) bool {
	return !s.LeaseEnd(ref, now).IsZero()
}

// LeasedKey reports whether any incarnation of key is under a read lease
// at now.
func (s *Table) LeasedKey(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Before(s.leaseFloor) || now.Before(s.keyLeases[key]) || s.reading[key] > 0
}
