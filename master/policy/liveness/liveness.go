package liveness

import (
	"sync"
	"time"

	"sexton/api"
)

// Holders is which holders are alive, from their heartbeats, and what
// they last reported of their space. None of it is replicated; a new
// leader starts it afresh. The zero Holders is not usable: make one with
// New.
type Holders struct {
	mu      sync.Mutex
	holders map[api.SegmentID]Report
}

// Report is what the holder of a segment last reported, and when.
type Report struct {
	LastSeen  time.Time
	Used      int64
	Capacity  int64 // 0: not reported
	DeadBytes int64
}

// New is a term's liveness before its first heartbeat.
func New() *Holders {
	return &Holders{holders: map[api.SegmentID]Report{}}
}

// Reset forgets every holder (a new term).
func (s *Holders) Reset() {
	s.mu.Lock()
	s.holders = map[api.SegmentID]Report{}
	s.mu.Unlock()
}

// Heartbeat records what the holder of seg reported at now.
func (s *Holders) Heartbeat(seg api.SegmentID, used, capacity, dead int64, now time.Time) {
	s.mu.Lock()
	s.holders[seg] = Report{LastSeen: now, Used: used, Capacity: capacity, DeadBytes: dead}
	s.mu.Unlock()
}

// Forget drops the holder of seg (unmounted).
func (s *Holders) Forget(seg api.SegmentID) {
	s.mu.Lock()
	delete(s.holders, seg)
	s.mu.Unlock()
}

// HeartbeatAges is, per holder this term knows, the time since its last
// heartbeat (a holder mounted when the term began counts from then).
func (s *Holders) HeartbeatAges(now time.Time) map[api.SegmentID]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[api.SegmentID]time.Duration, len(s.holders))
	for seg, h := range s.holders {
		out[seg] = now.Sub(h.LastSeen)
	}
	return out
}

// Live reports whether the holder of seg sent a heartbeat within ttl of
// now.
func (s *Holders) Live(seg api.SegmentID, ttl time.Duration, now time.Time) bool {
	_, ok := s.LiveReport(seg, ttl, now)
	return ok
}

// LiveReport is what the holder of seg last reported, and whether that
// was within ttl of now.
func (s *Holders) LiveReport(seg api.SegmentID, ttl time.Duration, now time.Time) (Report, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holders[seg]
	return h, ok && now.Sub(h.LastSeen) <= ttl
}
