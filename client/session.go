package client

import (
	"sync"

	"github.com/google/uuid"

	"sexton/api"
)

// sessions numbers one client's mutating requests and tracks which of
// them are still waiting for an answer, to compute the floor: every
// request below it has been answered, so the masters may forget those
// results.
type sessions struct {
	id string

	mu          sync.Mutex
	next        uint64
	outstanding map[uint64]struct{}
}

func newSessions() *sessions {
	return &sessions{id: uuid.NewString(), next: 1, outstanding: make(map[uint64]struct{})}
}

// begin draws the session of a new request. The caller must call end with
// it once the request is answered or given up on.
func (s *sessions) begin() api.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	s.next++
	s.outstanding[seq] = struct{}{}
	return api.Session{ClientID: s.id, Seq: seq, Floor: s.floorLocked()}
}

// end marks seq answered. A request given up on with OUTCOME_UNKNOWN is
// ended too: its retries are over, and the masters answer any late repeat
// (there is none from this client) from the table or with OUTCOME_UNKNOWN.
func (s *sessions) end(seq uint64) {
	s.mu.Lock()
	delete(s.outstanding, seq)
	s.mu.Unlock()
}

func (s *sessions) floorLocked() uint64 {
	floor := s.next
	for seq := range s.outstanding {
		floor = min(floor, seq)
	}
	return floor
}
