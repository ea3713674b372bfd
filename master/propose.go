package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
)

// proposeFor proposes cmd and returns the fsm's answer to it as an *R.
// The error is the proposal's (propose) or, once the entry is applied,
// the refusal the fsm answered in R's Err field; in the latter case the
// answer is returned too, for callers that read more than the error. A
// duplicate answered from the session table is counted in the metrics.
func proposeFor[R any](n *Node, cmd fsm.Command) (*R, error) {
	res, err := n.propose(cmd)
	if err != nil {
		return nil, err
	}
	return answerOf[R](n, cmd.Type(), res)
}

// answerOf is the fsm's answer res to a command of type t as an *R, with
// the refusal in its Err field as the error (see proposeFor).
func answerOf[R any](n *Node, t fsm.CommandType, res any) (*R, error) {
	r, ok := res.(*R)
	if !ok {
		return nil, api.Errorf(api.CodeInternal, "%s answered %T, want %T", t, res, r)
	}
	a := fsm.AnswerOf(r)
	if a.Sessioned {
		n.metrics.noteDuplicate(t, a.Duplicate)
	}
	if a.Err != nil {
		return r, a.Err
	}
	return r, nil
}

// propose stamps cmd with the leader's clock, unless the caller set it (a
// handler that decided something at an instant, a placement or a lease
// check, proposes that instant), encodes it,
// applies it through Raft and returns the fsm's result once the entry is
// committed and applied on this node.
//
// An error says whether the entry can have been appended: NOT_LEADER and
// UNAVAILABLE only when it certainly was not, OUTCOME_UNKNOWN whenever it
// may still commit (under this leader or the next one).
func (n *Node) propose(cmd fsm.Command) (any, error) {
	return n.proposeApplied(cmd, nil)
}

// proposeApplied is propose that also calls onApplied (when not nil) with
// the fsm's result on the fsm goroutine as soon as this node applies the
// entry, before propose returns (applied.go): a caller that answers
// others from onApplied answers them two goroutine hand-offs sooner.
// onApplied runs at most once and must not block; it may not run at all
// (the entry failed, or was applied after the wait ended), so the caller
// still acts on what proposeApplied returns, whichever comes first.
func (n *Node) proposeApplied(cmd fsm.Command, onApplied func(any)) (any, error) {
	data, err := n.encodeProposal(cmd)
	if err != nil {
		return nil, err
	}
	if onApplied != nil {
		defer n.rfsm.applied.add(data, onApplied)()
	}
	start := time.Now()
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	if err := n.waitApplied(f, cmd.Type().String()); err != nil {
		return nil, err
	}
	n.metrics.observeCommit(time.Since(start))
	return f.Response(), nil
}

// encodeProposal stamps cmd with the leader's clock, unless the caller
// set it, and encodes it for the log.
func (n *Node) encodeProposal(cmd fsm.Command) ([]byte, error) {
	fsm.StampNow(cmd, time.Now().UnixNano())
	data, err := fsm.Encode(cmd)
	if err != nil {
		return nil, api.Errorf(api.CodeInvalidParams, "encode %T: %v", cmd, err)
	}
	// Never propose an entry the fsm would refuse: a refused entry halts
	// every node that applies it. Encode refuses what Decode would for a
	// command built by this binary (an unknown version, a field of a later
	// version, a size out of bounds), so decoding every entry again before
	// proposing it checks the encoder against the decoder, not the
	// command. That costs the leader a decode per entry (per Remove, 2 % of
	// its CPU); builds with invariants on (the race detector or the
	// "invariants" tag: `make test`) still do it for every proposal, so a
	// mismatch between the two fails the suite.
	if fsm.InvariantsEnabled {
		if _, err := fsm.Decode(data); err != nil {
			return nil, api.Errorf(api.CodeInvalidParams, "refusing to propose %s: %v", cmd.Type(), err)
		}
	}
	if n.cfg.hooks.beforeApply != nil {
		n.cfg.hooks.beforeApply(n, cmd)
	}
	return data, nil
}

// waitApplied waits for a proposal's future. hashicorp/raft's timeout only
// bounds the enqueue; once enqueued, a future answers when the entry is
// applied or leadership is lost, but one still queued when raft shuts down
// may never answer. So the wait is bounded here too, and a proposal whose
// wait ends without an answer has an unknown outcome.
func (n *Node) waitApplied(f raft.Future, what string) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	timer := time.NewTimer(n.cfg.ApplyTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return n.proposeError(err, what)
		}
		return nil
	case <-timer.C:
		return api.Errorf(api.CodeOutcomeUnknown, "%s not applied within %v; it may still commit", what, n.cfg.ApplyTimeout)
	case <-n.stopped:
		return api.Errorf(api.CodeOutcomeUnknown, "master shutting down with %s in flight; it may still commit", what)
	}
}

// barrier is raft's Barrier, waited for until ctx ends or the node stops.
// A leader whose peers cannot append (a full follower is still "in
// contact") stays leader without committing, so a barrier can stay pending
// for good; Shutdown must not wait behind it. The goroutine left waiting
// ends when raft's shutdown answers the future.
func (n *Node) barrier(ctx context.Context) error {
	f := n.raft.Barrier(n.cfg.ApplyTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stopped:
		return raft.ErrRaftShutdown
	}
}

// proposeError turns the failure of a log entry (an Apply, or a membership
// change) into a typed error. Only failures that raft reports before the
// entry is given an index — this node is not the leader, a leadership
// transfer is under way, the apply queue is full — mean "not executed".
// Anything later (leadership lost while committing, shutdown, a snapshot
// restored over it, a log store failure) leaves the entry possibly in a
// majority's log, where the next leader commits it: the outcome is unknown,
// and saying NOT_LEADER would invite the client to act as if it had not
// happened.
func (n *Node) proposeError(err error, what string) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notLeader()
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return api.Errorf(api.CodeUnavailable, "raft apply queue full: %s not proposed: %v", what, err)
	}
	return api.Errorf(api.CodeOutcomeUnknown, "%s proposed but not confirmed: %v", what, err)
}

// raftError turns the failure of a raft operation that appends nothing a
// client's request depends on (VerifyLeader, Barrier, GetConfiguration)
// into the typed error a client can act on: the request was not executed.
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

// requireLeader refuses a call unless this node is the ready leader of the
// current term.
func (n *Node) requireLeader() error {
	if !n.isReady() {
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

// requireLeaderSession is requireLeader for a mutating request: it also
// refuses a malformed session.
func (n *Node) requireLeaderSession(s api.Session) error {
	if err := n.requireLeader(); err != nil {
		return err
	}
	return s.Valid()
}
