package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"sexton/api"
)

// A three-node cluster forms from --bootstrap --peers, and a client given
// all three addresses works whichever node it reaches first.
func TestClusterFormsAndAnyAddressWorks(t *testing.T) {
	c := startCluster(t, 3)
	h := mountFake(t, c.client(0), "a", "p1")
	for r := 0; r < 3; r++ {
		cl := c.client(r)
		ctx, cancel := ctxT(20 * time.Second)
		key := fmt.Sprintf("any/%d", r)
		inc, err := putMeta(ctx, cl, key, "p1")
		if err != nil {
			cancel()
			t.Fatalf("rotation %d: put: %v", r, err)
		}
		var g api.GetResponse
		if err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &g); err != nil {
			cancel()
			t.Fatalf("rotation %d: get: %v", r, err)
		}
		cancel()
		if g.Object.Incarnation != inc || len(g.Object.Replicas) != 1 || g.Object.Replicas[0].Segment != h.seg {
			t.Fatalf("rotation %d: got %+v, want incarnation %s on %s", r, g.Object, inc, h.seg)
		}
	}
	// Every node agrees on the peers and on one leader.
	var leaders = map[string]bool{}
	for _, m := range c.nodes {
		st, err := c.status(m)
		if err != nil {
			t.Fatalf("status %s: %v", m.id, err)
		}
		leaders[st.Leader] = true
	}
	if len(leaders) != 1 {
		t.Fatalf("nodes disagree on the leader: %v", leaders)
	}
}

// A follower answers NOT_LEADER with the leader's RPC address.
func TestFollowerRedirectsToLeader(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.leader()
	for _, m := range c.nodes {
		if m == leader {
			continue
		}
		conn := dialT(t, m.rpcAddr, c.token)
		ctx, cancel := ctxT(5 * time.Second)
		err := conn.Call(ctx, api.MethodRemove, &api.KeyRequest{Key: "x"}, nil)
		cancel()
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeNotLeader {
			t.Fatalf("follower %s: got %v, want NOT_LEADER", m.id, err)
		}
		if e.Leader != leader.rpcAddr {
			t.Fatalf("follower %s: hint %q, want leader %s", m.id, e.Leader, leader.rpcAddr)
		}
	}
}
