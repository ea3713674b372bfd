package master

import (
	"testing"
	"time"

	"sexton/internal/testutil"
)

// Liveness is not readiness: a node whose peers are gone has no leader
// and is not ready, but its Raft loop still answers, so a watchdog keeps
// it; a shut-down node is neither.
func TestRaftResponsiveWithoutQuorum(t *testing.T) {
	tc := startCluster(t, 3)
	li := tc.leaderIndex(t)
	for i := range 3 {
		if ok, why := tc.node(i).RaftResponsive(2 * time.Second); !ok {
			t.Fatalf("node %d of a healthy cluster: %s", i, why)
		}
		testutil.WaitFor(t, 10*time.Second, func() bool { ok, _ := tc.node(i).Readiness(); return ok }, "every node ready")
	}
	alone := (li + 1) % 3
	for i := range 3 {
		if i != alone {
			tc.kill(i)
		}
	}
	n := tc.node(alone)
	testutil.WaitFor(t, 10*time.Second, func() bool { ok, _ := n.Readiness(); return !ok }, "the lone node not ready")
	for range 3 {
		if ok, why := n.RaftResponsive(2 * time.Second); !ok {
			t.Fatalf("a node without quorum is hung: %s", why)
		}
	}
	tc.stop(alone)
	if ok, _ := n.RaftResponsive(time.Second); ok {
		t.Fatal("a shut-down node answers as alive")
	}
}
