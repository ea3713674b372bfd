package master

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/internal/testutil"
)

// TestDeposedLeaderIsNeverReady loses leadership exactly between a new
// leader's committed EpochBegin and the moment it would mark itself ready,
// after its duties were already told to stop: the deposed node must not
// count itself ready, and must answer NOT_LEADER, while another node leads.
func TestDeposedLeaderIsNeverReady(t *testing.T) {
	var armed atomic.Bool
	var victim atomic.Pointer[Node]
	tc := startCluster(t, 3, func(c *Config) {
		c.hooks.beforeReady = func(n *Node) {
			if !armed.CompareAndSwap(true, false) {
				return
			}
			victim.Store(n)
			// Hand leadership away and wait until this node has stepped
			// down and its duties were told to stop, so the stop runs
			// before the ready mark below, the order of the fault.
			if err := n.raft.LeadershipTransfer().Error(); err != nil {
				t.Errorf("leadership transfer from %s: %v", n.cfg.ID, err)
			}
			deadline := time.Now().Add(harnessTimeout)
			for time.Now().Before(deadline) {
				n.leaderMu.Lock()
				stopped := n.leaderCancel == nil
				n.leaderMu.Unlock()
				if stopped && n.raft.State() != raft.Leader {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	first := tc.leaderIndex(t)
	armed.Store(true)
	if err := tc.nodes[first].raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, harnessTimeout, func() bool { return victim.Load() != nil }, "the new leader reaches the hook")
	v := victim.Load()
	// Some node other than the victim leads; the victim may be elected
	// again later, but only with a barrier of its own.
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if n != v && n.IsLeader() {
				return true
			}
		}
		return false
	}, "a ready leader other than the deposed one")
	for i := 0; i < 20; i++ {
		if v.raft.State() != raft.Leader && v.IsLeader() {
			t.Fatalf("deposed leader %s counts itself ready while %v", v.cfg.ID, v.raft.State())
		}
		if v.raft.State() != raft.Leader {
			err := v.requireLeader()
			var e *api.Error
			if !errors.As(err, &e) || e.Code != api.CodeNotLeader {
				t.Fatalf("deposed leader %s: requireLeader = %v, want NOT_LEADER", v.cfg.ID, err)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadinessIsForTheCurrentTermOnly: readiness recorded in an earlier
// term does not count once the node leads a later term, so a node that
// lost leadership and won it again never serves before its new barrier.
func TestReadinessIsForTheCurrentTermOnly(t *testing.T) {
	tc := startCluster(t, 1)
	n := tc.waitLeader(t)
	term := n.raft.CurrentTerm()
	if n.readyTerm.Load() != term {
		t.Fatalf("ready in term %d, current term %d", n.readyTerm.Load(), term)
	}
	// As if this node had been deposed and elected again: the ready mark
	// belongs to an older term than the one it leads now.
	n.readyTerm.Store(term - 1)
	if n.IsLeader() {
		t.Fatal("a readiness of an earlier term counts in the current one")
	}
	if err := n.requireLeader(); api.CodeOf(err) != api.CodeUnavailable {
		t.Fatalf("leader without this term's barrier: %v, want UNAVAILABLE", err)
	}
	n.readyTerm.Store(term)
	if !n.IsLeader() {
		t.Fatal("ready leader of the current term not ready")
	}
}

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
