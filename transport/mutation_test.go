package transport

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
)

// An OUTCOME_UNKNOWN answer (leadership lost after proposing) is repeated
// for a sessioned mutation, whose repeat the server answers with the first
// result; a call that is not a mutation gets the answer as it is.
func TestMutationRetriesOutcomeUnknown(t *testing.T) {
	var n atomic.Int64
	srv := startNode(t, func() error {
		if n.Add(1) == 1 {
			return api.Errorf(api.CodeOutcomeUnknown, "leadership lost after proposing")
		}
		return nil
	})
	cc := fastCluster([]string{srv.addr}, 5*time.Second)
	defer cc.Close()
	if err := cc.Call(context.Background(), "Op", nil, nil, Mutation()); err != nil {
		t.Fatalf("mutation: %v, want success on the repeat", err)
	}
	if got := srv.calls.Load(); got != 2 {
		t.Fatalf("%d calls, want 2", got)
	}
	n.Store(0)
	requireCode(t, cc.Call(context.Background(), "Op", nil, nil), api.CodeOutcomeUnknown)
}

// Giving up after an attempt that may have executed reports OUTCOME_UNKNOWN
// for a mutation, never the UNAVAILABLE that reads as "not done"; giving up
// when no attempt could have run stays UNAVAILABLE.
func TestMutationGiveUpSaysOutcomeUnknown(t *testing.T) {
	stall := startNode(t, func() error { time.Sleep(300 * time.Millisecond); return nil })
	cc := NewClusterClient([]string{stall.addr}, ClusterConfig{
		ClientConfig: ClientConfig{DialTimeout: time.Second, CallTimeout: 50 * time.Millisecond},
		MaxWait:      150 * time.Millisecond, BackoffMin: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond,
	})
	defer cc.Close()
	requireCode(t, cc.Call(context.Background(), "Op", nil, nil, Mutation()), api.CodeOutcomeUnknown)
	requireCode(t, cc.Call(context.Background(), "Op", nil, nil), api.CodeUnavailable)

	// Nothing listening: nothing was ever sent, so nothing can have run.
	dead := fastCluster([]string{deadAddr(t)}, 150*time.Millisecond)
	defer dead.Close()
	requireCode(t, dead.Call(context.Background(), "Op", nil, nil, Mutation()), api.CodeUnavailable)

	// UNAVAILABLE answered (leader not ready): the node did not act. The
	// client gives up while it waits between attempts, not while one is
	// on the wire (that one may have run, which would rightly make it
	// OUTCOME_UNKNOWN): long waits around quick answers, so a slow,
	// loaded machine cannot stretch an attempt over the deadline.
	busy := startNode(t, func() error { return api.Errorf(api.CodeUnavailable, "leader not ready") })
	bc := answeredCluster(busy.addr)
	defer bc.Close()
	requireCode(t, bc.Call(context.Background(), "Op", nil, nil, Mutation()), api.CodeUnavailable)

	// NOT_LEADER everywhere: the nodes did not act.
	follower := startNode(t, func() error { return &api.Error{Code: api.CodeNotLeader} })
	fc := answeredCluster(follower.addr)
	defer fc.Close()
	requireCode(t, fc.Call(context.Background(), "Op", nil, nil, Mutation()), api.CodeUnavailable)
}

// answeredCluster waits 400 ms between attempts and gives up after one
// second: its attempts (a node that answers at once) end far from the
// deadline.
func answeredCluster(addr string) *ClusterClient {
	return NewClusterClient([]string{addr}, ClusterConfig{
		ClientConfig: ClientConfig{DialTimeout: time.Second, CallTimeout: 2 * time.Second},
		MaxWait:      time.Second, BackoffMin: 400 * time.Millisecond, BackoffMax: 400 * time.Millisecond,
	})
}
