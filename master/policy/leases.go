package policy

import (
	"time"

	"sexton/api"
)

// readingRetry is how soon a fetch looks again at a task withheld because
// a Get of its key is between its read and its lease grant.
const readingRetry = 5 * time.Millisecond

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
