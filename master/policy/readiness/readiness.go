package readiness

import (
	"fmt"
	"time"
)

// Facts is what /readyz decides from, gathered from the log
// store's guard and raft at one moment.
type Facts struct {
	// StoreCannotWrite, StoreFailingSince and StoreErr: the log store
	// refuses writes (raftio's store guard), since when, and why.
	StoreCannotWrite  bool
	StoreFailingSince time.Time
	StoreErr          error
	LeaderKnown       bool // some node is known to lead this term
	Leading           bool // this node is in raft's Leader state
	LeaderReady       bool // this node finished its term's barrier and EpochBegin (the master's isReady)
	Applied, Commit   uint64
}

// ReadyFor is the readiness decision, in one place: a node is ready when
// its log store can write, a leader is known, it has finished its own
// barrier if it leads, and it has applied everything it knows to be
// committed. Not ready, it says which of these fails, for the operator.
func ReadyFor(f Facts, now time.Time) (bool, string) {
	if f.StoreCannotWrite {
		return false, fmt.Sprintf("log store cannot write for %v (not campaigning until a write works again): %v\n", now.Sub(f.StoreFailingSince).Round(time.Second), f.StoreErr)
	}
	if !f.LeaderKnown {
		return false, "no leader known\n"
	}
	if f.Leading && !f.LeaderReady {
		return false, "leader not ready (barrier pending)\n"
	}
	if f.Applied < f.Commit {
		return false, "applying committed entries\n"
	}
	return true, ""
}
