package master

import (
	"sync"
	"time"

	"sexton/api"
	"sexton/master/policy/backoff"
	"sexton/master/policy/leases"
	"sexton/master/policy/liveness"
	"sexton/master/policy/revokegate"
)

// softState is what only the leader knows and a new leader rebuilds:
// which holders are alive (liveness), which incarnations are under a read
// lease (leases), which delete tasks are backing off after failures
// (backoff), and the revoke gate (revokegate). None of it is replicated;
// a failover resets it, and the new leader compensates by treating every
// incarnation as leased for one period.
type softState struct {
	*liveness.Holders
	*leases.Table
	*backoff.Tasks
	revokegate.Gate

	// DropMu orders lease grants against replica drops: a Get holds it
	// shared from its fsm read to its lease grant, an eviction exclusively
	// from its lease check until its drop is applied, so no Get can answer
	// a replica between an eviction's check and its drop.
	DropMu sync.RWMutex
}

// newSoftState is a term's soft state before its first heartbeat.
func newSoftState() *softState {
	return &softState{Holders: liveness.New(), Table: leases.New(), Tasks: backoff.New()}
}

// BeginTerm forgets the last term and leases every incarnation until
// leaseFloor.
func (s *softState) BeginTerm(leaseFloor time.Time) {
	s.Holders.Reset()
	s.Tasks.Reset()
	s.RevokeDone()
	s.Table.BeginTerm(leaseFloor)
}

// Withheld reports whether task t may not be given to the holder mounted
// at epoch now, and until when: its incarnation is leased, or the task is
// backing off after failures (backoff.Tasks.Withheld).
func (s *softState) Withheld(t api.LocalDeleteTask, epoch uint64, now time.Time) (bool, time.Time) {
	end := s.LeaseEnd(api.ObjectRef{Key: t.Key, Incarnation: t.Incarnation}, now)
	return s.Tasks.Withheld(t.ID, epoch, end, now)
}
