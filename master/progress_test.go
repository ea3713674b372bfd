package master

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"sexton/api"
	"sexton/internal/testutil"
)

// listKeyTasks lists key's delete tasks with their progress.
func (tc *testCluster) listKeyTasks(t testing.TB, key string) map[uint64]taskAndProgress {
	t.Helper()
	var resp api.ListTasksResponse
	if err := tc.call(api.MethodListTasks, &api.ListTasksRequest{Key: key}, &resp); err != nil {
		t.Fatalf("ListTasks %q: %v", key, err)
	}
	if len(resp.Progress) != len(resp.Tasks) {
		t.Fatalf("ListTasks %q: %d tasks, %d progress entries", key, len(resp.Tasks), len(resp.Progress))
	}
	out := map[uint64]taskAndProgress{}
	for i, task := range resp.Tasks {
		out[task.ID] = taskAndProgress{task, resp.Progress[i]}
	}
	return out
}

// removeAndListTasks removes key and lists its delete tasks, which must
// number want.
func (tc *testCluster) removeAndListTasks(t testing.TB, key string, want int) map[uint64]taskAndProgress {
	t.Helper()
	if err := tc.remove(key); err != nil {
		t.Fatal(err)
	}
	tasks := tc.listKeyTasks(t, key)
	if len(tasks) != want {
		t.Fatalf("%d tasks of %q, want %d: %+v", len(tasks), key, want, tasks)
	}
	return tasks
}

type taskAndProgress struct {
	api.LocalDeleteTask
	p api.TaskProgress
}

// A removed key's tasks say where they stand: the older copy's tasks are
// pending and the newest copy's withheld behind them; a failure a holder
// reports, or a fetch again without an answer, makes its task retrying,
// with attempts and the error; a holder
// that stops heartbeating makes its tasks holder_down; and an ack that
// drops a task is observed as deletion lag.
func TestTaskProgressSaysWhyATaskWaits(t *testing.T) {
	const holderTTL = 400 * time.Millisecond
	tc := startCluster(t, 1, func(c *Config) { c.HolderTTL = holderTTL })
	h1 := tc.mountHolder(t, "s1", "p")
	h2 := tc.mountHolder(t, "s2", "p")
	tc.waitLeaseFloor(t)
	old := tc.put(t, "k", 10, 2).Incarnation
	newest := tc.put(t, "k", 10, 2).Incarnation // the overwrite leaves old's copies to delete
	tasks := tc.removeAndListTasks(t, "k", 4)   // 2 copies × 2 incarnations
	for _, x := range tasks {
		want := api.TaskPending
		if x.Incarnation == newest {
			want = api.TaskWithheld
		}
		if x.p.State != want || x.p.Holder != "fake-"+string(x.Segment) || x.p.Attempts != 0 {
			t.Errorf("task %d (%s on %s): %+v, want state %s, holder fake-%s, no attempts", x.ID, x.Incarnation, x.Segment, x.p, want, x.Segment)
		}
	}

	// h1 fetches the old copy's task and fails it, saying why.
	got := h1.fetch(t, 0, 0)
	if len(got) != 1 || got[0].Incarnation != old {
		t.Fatalf("h1 fetched %+v, want the old copy's task only", got)
	}
	if _, err := tc.link().Ack(context.Background(), &api.AckTasksRequest{Segment: h1.Seg, MountEpoch: h1.Epoch,
		Failures: []api.TaskFailure{{TaskID: got[0].ID, Error: "disk on fire"}}}); err != nil {
		t.Fatal(err)
	}
	x := tc.listKeyTasks(t, "k")[got[0].ID]
	if x.p.State != api.TaskRetrying || x.p.Attempts != 1 || x.p.LastError != "disk on fire" || x.p.LastGiven == 0 {
		t.Errorf("after a reported failure: %+v, want retrying, 1 attempt, the error, when it was given", x.p)
	}

	// h2 fetches the old copy's task and fetches again without answering:
	// a silent failure.
	silent := h2.fetch(t, 0, 0)
	if len(silent) != 1 || silent[0].Incarnation != old {
		t.Fatalf("h2 fetched %+v, want the old copy's task only", silent)
	}
	if again := h2.fetch(t, 0, 0); len(again) != 0 {
		t.Fatalf("h2 got %+v again at once, want it backing off", again)
	}
	x = tc.listKeyTasks(t, "k")[silent[0].ID]
	if x.p.State != api.TaskRetrying || x.p.Attempts != 1 || x.p.LastError != "fetched again without an answer" {
		t.Errorf("after a fetch without an answer: %+v, want retrying, 1 attempt, why", x.p)
	}

	// h2 stops heartbeating: once the TTL passes its tasks are holder_down.
	h2.die()
	time.Sleep(holderTTL + 100*time.Millisecond)
	for _, x := range tc.listKeyTasks(t, "k") {
		if x.Segment == h2.Seg && (x.p.State != api.TaskHolderDown || x.p.Holder != "fake-s2") {
			t.Errorf("task %d on the silent holder: %+v, want holder_down at fake-s2", x.ID, x.p)
		}
	}

	// After its backoff h1 gets the task again and acks it: the ack
	// commits, the task is gone, and the lag is observed.
	testutil.WaitFor(t, 5*time.Second, func() bool {
		again := h1.fetch(t, 0, 0)
		if len(again) == 0 {
			return false
		}
		h1.ack(t, again, ackAll(api.AckRemoved))
		return true
	}, "h1 gets the failed task again")
	if _, ok := tc.listKeyTasks(t, "k")[got[0].ID]; ok {
		t.Fatalf("task %d still pending after its ack", got[0].ID)
	}
	var m dto.Metric
	if err := tc.waitLeader(t).metrics.deleteLag.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n != 1 || m.GetHistogram().GetSampleSum() <= 0 {
		t.Errorf("sexton_delete_lag_seconds: %d samples, sum %v; want 1 sample > 0", n, m.GetHistogram().GetSampleSum())
	}
}

// TestSnapshotPauseIsObserved: a snapshot records how long it held the
// fsm goroutine, the pause the 50 ms Apply target is about.
func TestSnapshotPauseIsObserved(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) { c.SnapshotInterval = time.Hour })
	n := tc.waitLeader(t)
	tc.mountHolder(t, "seg-a", "")
	tc.put(t, "k", 10, 1)
	if err := n.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := n.metrics.snapshotPause.Write(&m); err != nil {
		t.Fatal(err)
	}
	if c := m.GetHistogram().GetSampleCount(); c != 1 {
		t.Errorf("sexton_fsm_snapshot_pause_seconds: %d samples after one snapshot, want 1", c)
	}
}

// A task whose incarnation a Get leased is listed as leased, with the
// lease's end, instead of pending: the holder is not given it until then.
// Once the lease ends it is pending again.
func TestTaskProgressShowsReadLease(t *testing.T) {
	const leaseTTL = 700 * time.Millisecond
	tc := startCluster(t, 1, func(c *Config) { c.LeaseTTL = leaseTTL })
	h := tc.mountHolder(t, "s1", "p")
	tc.waitLeaseFloor(t)
	tc.put(t, "k", 10, 1)
	before := time.Now()
	if _, err := tc.get("k"); err != nil {
		t.Fatal(err)
	}
	tasks := tc.removeAndListTasks(t, "k", 1)
	for _, x := range tasks {
		end := time.Unix(0, x.p.LeaseEnd)
		if x.p.State != api.TaskLeased || end.Before(before.Add(leaseTTL)) || end.After(time.Now().Add(leaseTTL)) {
			t.Fatalf("task under a read lease: %+v, want state %s and the lease's end about %v from the Get", x.p, api.TaskLeased, leaseTTL)
		}
		h.wantNoTasks(t, "the holder was given %+v while the lease holds")
		time.Sleep(time.Until(end) + 20*time.Millisecond)
		y := tc.listKeyTasks(t, "k")[x.ID]
		if y.p.State != api.TaskPending || y.p.LeaseEnd != 0 {
			t.Fatalf("after the lease ended: %+v, want pending without a lease end", y.p)
		}
	}
}
