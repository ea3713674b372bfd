package master

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// readinessFacts is what /readyz decides from, gathered from the log
// store's guard and raft at one moment.
type readinessFacts struct {
	// storeCannotWrite, storeFailingSince and storeErr: the log store
	// refuses writes (raftio's store guard), since when, and why.
	storeCannotWrite  bool
	storeFailingSince time.Time
	storeErr          error
	leaderKnown       bool // some node is known to lead this term
	leading           bool // this node is in raft's Leader state
	leaderReady       bool // this node finished its term's barrier and EpochBegin (isReady)
	applied, commit   uint64
}

// readyFor is the readiness decision, in one place: a node is ready when
// its log store can write, a leader is known, it has finished its own
// barrier if it leads, and it has applied everything it knows to be
// committed. Not ready, it says which of these fails, for the operator.
func readyFor(f readinessFacts, now time.Time) (bool, string) {
	if f.storeCannotWrite {
		return false, fmt.Sprintf("log store cannot write for %v (not campaigning until a write works again): %v\n", now.Sub(f.storeFailingSince).Round(time.Second), f.storeErr)
	}
	if !f.leaderKnown {
		return false, "no leader known\n"
	}
	if f.leading && !f.leaderReady {
		return false, "leader not ready (barrier pending)\n"
	}
	if f.applied < f.commit {
		return false, "applying committed entries\n"
	}
	return true, ""
}

// readiness is readyFor of this node now (/readyz).
func (n *Node) readiness() (bool, string) {
	var f readinessFacts
	f.storeCannotWrite, f.storeFailingSince, f.storeErr = n.guard.State()
	_, id := n.raft.LeaderWithID()
	f.leaderKnown = id != ""
	f.leading = n.raft.State() == raft.Leader
	if f.leading {
		f.leaderReady = n.isReady()
	}
	f.applied, f.commit = n.raft.AppliedIndex(), n.raft.CommitIndex()
	return readyFor(f, time.Now())
}

// Readiness is what /readyz answers: ready once a leader is known and
// this node has applied everything it knows to be committed (as leader:
// after its barrier and EpochBegin). When not, why says what it waits for.
// The process supervisor (systemd's READY=1) uses the same answer.
func (n *Node) Readiness() (ready bool, why string) {
	ok, why := n.readiness()
	return ok, strings.TrimSpace(why)
}
