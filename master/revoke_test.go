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

	// Five discard ticks with a full registry and nothing draining.
	before := leader.Raft().LastIndex()
	time.Sleep(5500 * time.Millisecond)
	proposed := leader.Raft().LastIndex() - before
	if st := leader.FSM().Stats(); st.PendingPuts != 3 {
		t.Fatalf("%d puts pending after revokes into a full registry, want 3", st.PendingPuts)
	}
	// Unchecked, that is 3 refused revokes a tick; with the gate, one
	// refusal and then retries at doubling intervals.
	if proposed > 4 {
		t.Fatalf("%d entries proposed in 5 ticks while the registry was full, want at most 4", proposed)
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

// The revocation gate closes on a refusal for a full registry and reopens
// when the registry drains, grows, or the doubling backoff passes.
func TestRevokeGateReopensOnRoomOrBackoff(t *testing.T) {
	s := newSoftState()
	now := time.Unix(1000, 0)
	if !s.revokeOpen(2, 2, now) {
		t.Fatal("the gate starts open")
	}
	s.revokeFull(2, 2, now)
	if s.revokeOpen(2, 2, now.Add(revokeBackoffMin/2)) {
		t.Fatal("open right after a refusal with no room made")
	}
	if !s.revokeOpen(1, 2, now) || !s.revokeOpen(2, 3, now) {
		t.Fatal("a task drained or capacity added must reopen the gate")
	}
	if !s.revokeOpen(2, 2, now.Add(revokeBackoffMin)) {
		t.Fatal("the backoff must end")
	}
	s.revokeFull(2, 2, now)
	if s.revokeOpen(2, 2, now.Add(revokeBackoffMin)) || !s.revokeOpen(2, 2, now.Add(2*revokeBackoffMin)) {
		t.Fatal("a second refusal doubles the backoff")
	}
	s.revokeDone()
	if !s.revokeOpen(2, 2, now) {
		t.Fatal("a revoke that went through reopens the gate")
	}
}
