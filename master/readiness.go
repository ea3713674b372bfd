package master

import (
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"sexton/master/policy/readiness"
)

// readiness is readiness.ReadyFor of this node now (/readyz).
func (n *Node) readiness() (bool, string) {
	var f readiness.Facts
	f.StoreCannotWrite, f.StoreFailingSince, f.StoreErr = n.guard.State()
	_, id := n.raft.LeaderWithID()
	f.LeaderKnown = id != ""
	f.Leading = n.raft.State() == raft.Leader
	if f.Leading {
		f.LeaderReady = n.isReady()
	}
	f.Applied, f.Commit = n.raft.AppliedIndex(), n.raft.CommitIndex()
	return readiness.ReadyFor(f, time.Now())
}

// Readiness is what /readyz answers: ready once a leader is known and
// this node has applied everything it knows to be committed (as leader:
// after its barrier and EpochBegin). When not, why says what it waits for.
// The process supervisor (systemd's READY=1) uses the same answer.
func (n *Node) Readiness() (ready bool, why string) {
	ok, why := n.readiness()
	return ok, strings.TrimSpace(why)
}
