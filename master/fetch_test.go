package master

import (
	"fmt"
	"testing"
	"time"

	"sexton/api"
	"sexton/master/policy/backoff"
)

// Tasks that keep failing (RetryableFailure) must not hide the tasks
// behind them: a fetch answers at most MaxFetchLimit tasks in id order,
// so 256 failing tasks would otherwise be all a holder ever sees.
func TestFailingTasksDoNotStarveLaterTasks(t *testing.T) {
	tc, h := clusterWithTasks(t, total)

	first := h.fetch(t, 0, time.Second)
	if len(first) != api.MaxFetchLimit {
		t.Fatalf("first fetch: %d tasks, want %d", len(first), api.MaxFetchLimit)
	}
	failing := map[uint64]bool{}
	for _, task := range first {
		failing[task.ID] = true
	}
	h.ack(t, first, ackAll(api.AckRetryableFailure))

	rest := h.fetch(t, 0, time.Second)
	if len(rest) != total-api.MaxFetchLimit {
		t.Fatalf("after %d failures the next fetch got %d tasks, want the %d behind them", len(first), len(rest), total-api.MaxFetchLimit)
	}
	for _, task := range rest {
		if failing[task.ID] {
			t.Fatalf("task %d (%s) fetched again right after failing", task.ID, task.Key)
		}
	}
	if n := h.ack(t, rest, ackAll(api.AckRemoved)); n != len(rest) {
		t.Fatalf("ack dropped %d of %d", n, len(rest))
	}

	// The failed tasks come back once their backoff ends; a long poll is
	// woken by that, not by an applied entry (none comes).
	start := time.Now()
	again := h.fetch(t, 0, 5*time.Second)
	if len(again) != api.MaxFetchLimit || time.Since(start) > 3*time.Second {
		t.Fatalf("after the backoff: %d tasks after %v, want the %d failed ones within about %v", len(again), time.Since(start), api.MaxFetchLimit, backoff.RetryBackoffMin)
	}
	for _, task := range again {
		if !failing[task.ID] {
			t.Fatalf("task %d was not one of the failed ones", task.ID)
		}
	}
	h.ack(t, again, ackAll(api.AckRemoved))
	if st := tc.waitLeader(t).FSM().Stats(); st.PendingTasks != 0 {
		t.Fatalf("%d tasks left", st.PendingTasks)
	}
}

const total = api.MaxFetchLimit + 44

// clusterWithTasks starts a one-node cluster with one fake holder and n
// pending delete tasks on it.
func clusterWithTasks(t *testing.T, n int) (*testCluster, *fakeHolder) {
	tc := startCluster(t, 1, shortLeases)
	h := tc.mountHolder(t, "seg-a", "")
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i)
	}
	tc.putMany(t, keys, 10)
	tc.removeMany(t, keys)
	tc.waitLeaseFloor(t)
	return tc, h
}

// A holder that does not ack its failures (it only acks terminal
// outcomes) fetches the same tasks again: that is taken as a failure
// too, and the fetch answers the tasks behind them.
func TestSilentlyFailedTasksDoNotStarveLaterTasks(t *testing.T) {
	tc, h := clusterWithTasks(t, total)
	first := h.fetch(t, 0, time.Second)
	if len(first) != api.MaxFetchLimit {
		t.Fatalf("first fetch: %d tasks, want %d", len(first), api.MaxFetchLimit)
	}
	// Nothing acked: the holder failed every one and fetches again.
	rest := h.fetch(t, 0, time.Second)
	if len(rest) != total-api.MaxFetchLimit || rest[0].ID <= first[len(first)-1].ID {
		t.Fatalf("fetch after %d silent failures: %d tasks, want the %d behind them", len(first), len(rest), total-api.MaxFetchLimit)
	}
	h.ack(t, rest, ackAll(api.AckRemoved))
	again := h.fetch(t, 0, 5*time.Second)
	if len(again) != api.MaxFetchLimit || again[0].ID != first[0].ID {
		t.Fatalf("after the backoff: %d tasks, want the %d that failed", len(again), api.MaxFetchLimit)
	}
	h.ack(t, again, ackAll(api.AckRemoved))
	if st := tc.waitLeader(t).FSM().Stats(); st.PendingTasks != 0 {
		t.Fatalf("%d tasks left", st.PendingTasks)
	}
}
