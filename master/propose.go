package master

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
)

// propose encodes cmd, applies it through Raft and returns the fsm's
// result once the entry is committed and applied on this node.
func (n *Node) propose(cmd fsm.Command) (any, error) {
	data, err := fsm.Encode(cmd)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidParams, "encode %T: %v", cmd, err)
	}
	// Never propose an entry the fsm would refuse: a refused entry halts
	// every node that applies it.
	if _, err := fsm.Decode(data); err != nil {
		return nil, api.Errorf(api.CodeInvalidParams, "refusing to propose %s: %v", cmd.Type(), err)
	}
	start := time.Now()
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		return nil, n.raftError(err)
	}
	n.metrics.observeCommit(time.Since(start))
	return f.Response(), nil
}

// raftError turns a raft failure into the typed error a client can act on.
func (n *Node) raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notLeader()
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return api.Errorf(api.CodeUnavailable, "raft apply timed out: %v", err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return api.Errorf(api.CodeUnavailable, "master shutting down")
	}
	return api.Errorf(api.CodeUnavailable, "raft: %v", err)
}

// notLeader is NOT_LEADER with the leader's RPC address when known. The
// address comes from the newest EpochBegin in the fsm, which the current
// leader proposed.
func (n *Node) notLeader() error {
	e := &api.Error{Code: api.CodeNotLeader, Message: fmt.Sprintf("node %s is not the leader", n.cfg.ID)}
	_, leaderID := n.raft.LeaderWithID()
	st := n.fsm.Stats()
	if leaderID != "" && string(leaderID) == st.LeaderID && st.LeaderID != n.cfg.ID {
		e.Leader = st.LeaderAddr
	}
	return e
}

// requireLeader refuses a call unless this node is the ready leader.
func (n *Node) requireLeader() error {
	if !n.ready.Load() {
		if n.raft.State() == raft.Leader {
			return api.Errorf(api.CodeUnavailable, "leader %s is not ready yet (barrier pending)", n.cfg.ID)
		}
		return n.notLeader()
	}
	return nil
}

// linearizable confirms leadership with a quorum before a read, so a
// deposed leader never answers from stale state.
func (n *Node) linearizable() error {
	if err := n.requireLeader(); err != nil {
		return err
	}
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return n.raftError(err)
	}
	return nil
}
