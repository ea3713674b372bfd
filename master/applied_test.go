package master

import (
	"sync/atomic"
	"testing"

	"sexton/api"
	"sexton/fsm"
)

// TestAppliedHookFiresOnTheLeaderBeforeProposeReturns: through a real
// three-node cluster, the hook a proposer registers runs when the leader
// applies the entry, before the proposal returns, with the very result
// the proposal then returns. It rests on hashicorp/raft handing the
// leader's fsm the Log it was given (applied.go); a raft that copied the
// entry's bytes would fail this test instead of silently taking the
// shortcut away from every Remove.
func TestAppliedHookFiresOnTheLeaderBeforeProposeReturns(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.waitLeader(t)
	var returned atomic.Bool
	var hookRes atomic.Value
	var fired, early atomic.Int32
	cmd := &fsm.Remove{V: fsm.RemoveV2, Keys: []string{"k"}, Spans: []fsm.RemoveSpan{{N: 1}}}
	res, err := leader.proposeApplied(cmd, func(res any) {
		fired.Add(1)
		if !returned.Load() {
			early.Add(1)
		}
		hookRes.Store(res)
	})
	returned.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	if fired.Load() != 1 || early.Load() != 1 {
		t.Fatalf("hook ran %d times, %d of them before proposeApplied returned; want once, before", fired.Load(), early.Load())
	}
	if hookRes.Load() != res {
		t.Fatalf("hook got %#v, proposeApplied returned %#v", hookRes.Load(), res)
	}
	rr := res.(*fsm.RemoveResult)
	if len(rr.Results) != 1 || rr.Results[0].Key != "k" {
		t.Fatalf("remove result %+v", rr.Results)
	}
	if n := leader.rfsm.applied.n.Load(); n != 0 {
		t.Fatalf("%d hooks left registered after the proposal returned", n)
	}
	// A proposal without a hook, and entries other nodes apply, leave the
	// registry empty too.
	if _, err := leader.propose(&fsm.Remove{V: fsm.RemoveV2, Keys: []string{"gone"}, Spans: []fsm.RemoveSpan{{N: 1}}}); err != nil {
		t.Fatal(err)
	}
	for i := range tc.nodes {
		if n := tc.node(i).rfsm.applied.n.Load(); n != 0 {
			t.Fatalf("node %d: %d hooks registered", i, n)
		}
	}
}

// TestRemoveBatcherAnswersFromTheAppliedHook: the batcher answers an
// entry's callers from the applied hook, while the proposal has not
// returned yet, and never a second time when the proposal then returns
// (even with an error: the entry was applied, so its results stand).
func TestRemoveBatcherAnswersFromTheAppliedHook(t *testing.T) {
	release := make(chan struct{})
	propose := func(c fsm.Command, onApplied func(any)) (any, error) {
		cmd := c.(*fsm.Remove)
		onApplied(removeAnswer(cmd))
		<-release
		return nil, api.Errorf(api.CodeOutcomeUnknown, "leadership lost after the entry was applied")
	}
	b := newRemoveBatcher(propose, newMetrics(nil), 0)
	defer b.close()
	answers := make(chan removeReply, 2)
	b.submit([]string{"k"}, nil, api.Session{}, func(r removeReply) { answers <- r })
	rep := <-answers // before release: from the hook
	if rep.err != nil || len(rep.results) != 1 || rep.results[0].Key != "k" {
		t.Fatalf("answered %+v, %v", rep.results, rep.err)
	}
	close(release)
	// The next entry goes through the whole proposal: by then the first
	// proposal's return has been handled, and a second answer to the
	// first caller would be in the channel.
	second := make(chan removeReply, 1)
	b.submit([]string{"k2"}, nil, api.Session{}, func(r removeReply) { second <- r })
	<-second
	select {
	case r := <-answers:
		t.Fatalf("the first caller was answered twice; second answer %+v, %v", r.results, r.err)
	default:
	}
}
