package master

import (
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// TestRemoveWhoseLeaderIsLostAnswersOutcomeUnknown proposes a Remove on a
// leader whose followers die right before the entry is handed to raft: the
// entry is appended to the leader's log, never committed while it leads,
// and the leader steps down. The answer must be OUTCOME_UNKNOWN (the entry
// could still commit under a next leader), never NOT_LEADER, which a
// client reads as "not executed".
func TestRemoveWhoseLeaderIsLostAnswersOutcomeUnknown(t *testing.T) {
	var armed atomic.Bool
	tc := startLosingCluster(t, &armed, func(cmd fsm.Command) bool { _, ok := cmd.(*fsm.Remove); return ok })
	tc.mountHolder(t, "seg-a", "")
	tc.put(t, "k", 10, 1)
	leader := tc.waitLeader(t)
	armed.Store(true)
	err := removeAndWait(leader, &api.RemoveRequest{Key: "k"})
	if code := api.CodeOf(err); code != api.CodeOutcomeUnknown {
		t.Fatalf("Remove whose leader was lost after proposing: %v, want %s", err, api.CodeOutcomeUnknown)
	}
}

// TestPutCommitWhoseLeaderIsLostAnswersOutcomeUnknown is the same for a
// one-commit put's PutCommit: its entry is never committed by the lost
// leader, and the answer must be OUTCOME_UNKNOWN, the put neither
// acknowledged nor reported as not done.
func TestPutCommitWhoseLeaderIsLostAnswersOutcomeUnknown(t *testing.T) {
	var armed atomic.Bool
	tc := startLosingCluster(t, &armed, func(cmd fsm.Command) bool { _, ok := cmd.(*fsm.PutCommit); return ok })
	tc.mountHolder(t, "seg-a", "")
	leader := tc.waitLeader(t)
	g := tc.putGrant(t, "k")
	armed.Store(true)
	answered := make(chan error, 2)
	leader.handlePutCommit(&api.PutCommitRequest{Key: "k", Size: 10, Incarnation: g.Incarnation, Replicas: g.Replicas},
		func(_ any, err error) { answered <- err })
	select {
	case err := <-answered:
		if code := api.CodeOf(err); code != api.CodeOutcomeUnknown {
			t.Fatalf("PutCommit whose leader was lost after proposing: %v, want %s", err, api.CodeOutcomeUnknown)
		}
	case <-time.After(leader.cfg.ApplyTimeout + 10*time.Second):
		t.Fatal("PutCommit whose leader was lost after proposing: never answered")
	}
	select {
	case err := <-answered:
		t.Fatalf("PutCommit answered twice; the second answer: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
}

// startLosingCluster starts three masters whose leader, while armed, kills
// both followers right before it hands Raft the next entry of a command
// that match picks (and disarms).
func startLosingCluster(t *testing.T, armed *atomic.Bool, match func(fsm.Command) bool) *testCluster {
	var tc *testCluster
	tc = startCluster(t, 3, func(c *Config) {
		// A leader lease long enough that the leader still leads when the
		// entry reaches raft after both followers are gone.
		c.HeartbeatTimeout = time.Second
		c.ElectionTimeout = time.Second
		c.LeaderLeaseTimeout = 500 * time.Millisecond
		c.hooks.beforeApply = func(n *Node, cmd fsm.Command) {
			if !match(cmd) || !armed.CompareAndSwap(true, false) {
				return
			}
			for i, other := range tc.nodes {
				if other != nil && other != n {
					tc.kill(i)
				}
			}
		}
	})
	return tc
}
