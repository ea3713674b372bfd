package master

import (
	"fmt"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
)

// While the registry is full, abandoned puts cannot be revoked (their
// replicas need delete tasks). The leader must not re-propose every
// revoke every tick; once tasks drain, the revokes go through.
func TestAbandonedPutRevocationWaitsForRegistryRoom(t *testing.T) {
	tc := startCluster(t, 1, shortLeases, func(c *Config) { c.DiscardTimeout = 100 * time.Millisecond })
	tc.setSettings(t, api.Settings{RegistryCapacity: 2})
	h := tc.mountHolder(t, "seg-a", "")
	for i := 0; i < 2; i++ {
		key := fmt.Sprintf("removed%d", i)
		tc.put(t, key, 10, 1)
		if err := tc.remove(key); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := tc.putStart(&api.PutStartRequest{Key: fmt.Sprintf("abandoned%d", i), Size: 10, ReplicaNum: 1}); err != nil {
			t.Fatal(err)
		}
	}
	leader := tc.waitLeader(t)
	if st := leader.FSM().Stats(); st.PendingTasks != 2 || st.PendingPuts != 3 {
		t.Fatalf("setup: %d tasks, %d puts pending; want a full registry (2) and 3 abandoned puts", st.PendingTasks, st.PendingPuts)
	}

	// The leader's discard tick refuses one revoke and closes the gate;
	// five more passes with the registry still full then propose nothing
	// (the gate's timing is in policy/revokegate/testdata/revoke_gate.txt).
	// Unchecked, each pass would propose a refused revoke.
	testutil.WaitFor(t, 10*time.Second, func() bool { return leader.soft.RevokeFailures() > 0 }, "a revoke refused for the full registry")
	before := leader.Raft().LastIndex()
	for range 5 {
		leader.discardAbandonedPuts()
	}
	proposed := leader.Raft().LastIndex() - before
	if st := leader.FSM().Stats(); st.PendingPuts != 3 {
		t.Fatalf("%d puts pending after revokes into a full registry, want 3", st.PendingPuts)
	}
	// At most one more: the leader's own tick, should the backoff (a
	// second) pass meanwhile.
	if proposed > 1 {
		t.Fatalf("%d entries proposed by 5 discard passes while the registry was full and the gate closed, want at most 1", proposed)
	}

	// Drain: the holder acks every task; the revokes follow.
	f := h.follow(t, ackAll(api.AckRemoved))
	testutil.WaitFor(t, 10*time.Second, func() bool {
		st := leader.FSM().Stats()
		return st.PendingPuts == 0 && st.PendingTasks == 0
	}, "abandoned puts revoked once the registry drained")
	// Each revoke queued the delete of its put's replica, and the holder
	// got it: five tasks, one per key.
	keys := map[string]bool{}
	for _, task := range f.seen() {
		keys[task.Key] = true
	}
	if len(keys) != 5 {
		t.Fatalf("the holder was given tasks of %d keys, want 5 (2 removed, 3 revoked): %v", len(keys), keys)
	}
}
