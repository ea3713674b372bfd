package master

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
)

// leaseTTL is the read lease of the lease tests: long enough for a test's
// steps, short enough to wait out.
const leaseTTL = 600 * time.Millisecond

func shortLeases(c *Config) { c.LeaseTTL = leaseTTL }

// onSegment reports whether the object's answer names a replica on seg.
func onSegment(o *api.ObjectInfo, seg api.SegmentID) bool {
	if o == nil {
		return false
	}
	return slices.ContainsFunc(o.Replicas, func(r api.ReplicaLocation) bool { return r.Segment == seg })
}

// An eviction checks leases and then proposes the drop. A Get that runs
// between the two must either wait for the drop (and not answer the
// dropped replica) or lease the replica before the check; it must never
// answer a replica the eviction then drops.
func TestEvictNeverDropsAReplicaLeasedAfterItsCheck(t *testing.T) {
	var afterCheck armedHook
	tc := startCluster(t, 1, shortLeases, func(c *Config) { c.hooks.afterEvictCheck = afterCheck.run })
	h := tc.mountHolder(t, "seg-a", "")
	ps := tc.put(t, "k", 10, 1)
	ref := api.ObjectRef{Key: "k", Incarnation: ps.Incarnation}
	tc.waitLeaseFloor(t)

	checked, release := make(chan struct{}), make(chan struct{})
	afterCheck.arm(func() { close(checked); <-release })
	defer afterCheck.arm(nil)

	type evictResult struct {
		refs []api.ObjectRef
		err  error
	}
	evicted := make(chan evictResult, 1)
	go func() {
		refs, err := h.evict([]api.ObjectRef{ref})
		evicted <- evictResult{refs, err}
	}()
	<-checked // the eviction found k unleased and has not proposed yet

	got := tc.getAsync("k")
	// Give the Get every chance to answer while the eviction is paused.
	var g getResult
	answered := false
	select {
	case g = <-got:
		answered = true
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	e := <-evicted
	afterCheck.arm(nil)
	if !answered {
		g = <-got
	}
	if e.err != nil {
		t.Fatalf("evict: %v", e.err)
	}
	if !slices.Contains(e.refs, ref) {
		t.Fatalf("evict dropped %v; k was not leased at the check, want it dropped", e.refs)
	}
	if g.err == nil && onSegment(g.obj, h.Seg) {
		t.Fatalf("a Get answered k's replica on %s (answered during the paused eviction: %v) and the eviction then dropped it", h.Seg, answered)
	}

	// And the plain case: a replica read before the check is not evicted.
	ps2 := tc.put(t, "k2", 10, 1)
	if _, err := tc.get("k2"); err != nil {
		t.Fatal(err)
	}
	refs, err := h.evict([]api.ObjectRef{{Key: "k2", Incarnation: ps2.Incarnation}})
	if err != nil || len(refs) != 0 {
		t.Fatalf("evict of a leased replica dropped %v (%v), want nothing", refs, err)
	}
}

// taskOf returns the task of (key, inc) among tasks, if any.
func taskOf(tasks []api.LocalDeleteTask, key string, inc api.ObjectIncarnation) (api.LocalDeleteTask, bool) {
	for _, task := range tasks {
		if task.Key == key && task.Incarnation == inc {
			return task, true
		}
	}
	return api.LocalDeleteTask{}, false
}

// Fault 7: a Get answers (k, inc1) and its replica; an overwrite then
// completes and queues inc1's delete task. The holder must not get that
// task while the Get's lease lasts (the reader may still be fetching the
// bytes), and must get it as soon as the lease ends: the long poll wakes
// at the lease's end, no new entry needed.
func TestReadLeaseWithholdsDeleteOfTheIncarnationRead(t *testing.T) {
	tc := startCluster(t, 1, shortLeases)
	h := tc.mountHolder(t, "seg-a", "")
	ps1 := tc.put(t, "k", 10, 1)
	tc.waitLeaseFloor(t)

	// The lease starts when the leader grants it, after this instant: a
	// lower bound of its end.
	leaseEnd := time.Now().Add(leaseTTL)
	obj, err := tc.get("k")
	if err != nil || obj.Incarnation != ps1.Incarnation || !onSegment(obj, h.Seg) {
		t.Fatalf("get: %+v %v", obj, err)
	}
	ps2 := tc.put(t, "k", 10, 1) // the overwrite: inc1 is superseded, its task queued
	if st := tc.waitLeader(t).FSM().Stats(); st.PendingTasks != 1 {
		t.Fatalf("%d tasks after the overwrite, want inc1's", st.PendingTasks)
	}

	h.wantNoTasks(t, "fetched %v while the Get's lease on inc1 lasts")
	start := time.Now()
	tasks := h.fetch(t, 0, 5*time.Second)
	got := time.Now()
	task, ok := taskOf(tasks, "k", ps1.Incarnation)
	if !ok {
		t.Fatalf("long poll answered %v, want inc1's task", tasks)
	}
	if got.Before(leaseEnd) {
		t.Fatalf("inc1's task fetched %v before the lease ended", leaseEnd.Sub(got))
	}
	if waited := got.Sub(start); waited > leaseTTL+time.Second {
		t.Fatalf("the long poll returned %v after it started; it must wake when the lease ends", waited)
	}
	h.ack(t, []api.LocalDeleteTask{task}, ackAll(api.AckRemoved))
	if obj, err := tc.get("k"); err != nil || obj.Incarnation != ps2.Incarnation {
		t.Fatalf("get after the overwrite: %+v %v", obj, err)
	}
}

// A Get that read inc1 before the overwrite applied but has not granted
// its lease yet must hold inc1's task back too: the fetch in between
// would hand the holder the delete of what the Get is about to answer.
func TestFetchWaitsForAReadInFlight(t *testing.T) {
	var afterRead armedHook
	tc := startCluster(t, 1, shortLeases, func(c *Config) { c.hooks.afterRead = func([]string) { afterRead.run() } })
	h := tc.mountHolder(t, "seg-a", "")
	ps1 := tc.put(t, "k", 10, 1)
	tc.waitLeaseFloor(t)

	read, release := make(chan struct{}), make(chan struct{})
	afterRead.arm(func() { close(read); <-release })
	defer afterRead.arm(nil)
	got := tc.getAsync("k")
	<-read // the Get has read inc1 and not yet leased it
	afterRead.arm(nil)

	tc.put(t, "k", 10, 1) // the overwrite queues inc1's task
	tasks := h.fetch(t, 0, 0)
	close(release)
	g := <-got
	if g.err != nil || g.obj.Incarnation != ps1.Incarnation {
		t.Fatalf("the paused Get answered %+v %v, want inc1", g.obj, g.err)
	}
	if _, ok := taskOf(tasks, "k", ps1.Incarnation); ok {
		t.Fatal("inc1's task was fetched while a Get that answers inc1 was between its read and its lease")
	}
	h.wantNoTasks(t, "fetched %v during the lease the Get then granted")
}

// A new leader does not know its predecessor's leases: it treats every
// incarnation as leased for one lease period, for fetches as for
// evictions.
func TestNewLeaderWithholdsDeletesForOneLeasePeriod(t *testing.T) {
	tc := startCluster(t, 3, shortLeases)
	h := tc.mountHolder(t, "seg-a", "")
	ps1 := tc.put(t, "k", 10, 1)
	tc.waitLeaseFloor(t)
	if obj, err := tc.get("k"); err != nil || obj.Incarnation != ps1.Incarnation {
		t.Fatalf("get: %+v %v", obj, err)
	}
	old := tc.leaderIndex(t)
	tc.kill(old) // the Get's lease dies with the leader that granted it
	leader := tc.waitLeader(t)
	tc.put(t, "k", 10, 1) // the overwrite, on the new leader
	h.wantNoTasks(t, "the new leader handed out %v within its first lease period")
	floor := leader.soft.LeaseFloor()
	tasks := h.fetch(t, 0, 5*time.Second)
	if _, ok := taskOf(tasks, "k", ps1.Incarnation); !ok || time.Now().Before(floor) {
		t.Fatalf("long poll answered %v at %v before the floor; want inc1's task once the floor passed", tasks, time.Until(floor))
	}
}

// Reconciliation must not tell a holder to tombstone a leased incarnation
// either: the answer waits for the lease to end when the caller's
// deadline allows, and leaves the incarnation out when it does not.
func TestReconcileSparesLeasedIncarnations(t *testing.T) {
	tc := startCluster(t, 1, shortLeases)
	h := tc.mountHolder(t, "seg-a", "")
	ps1 := tc.put(t, "k", 10, 1)
	tc.waitLeaseFloor(t)
	leaseEnd := time.Now().Add(leaseTTL) // a lower bound, as above
	if _, err := tc.get("k"); err != nil {
		t.Fatal(err)
	}
	ps2 := tc.put(t, "k", 10, 1)
	refs := []api.ObjectRef{{Key: "k", Incarnation: ps1.Incarnation}, {Key: "k", Incarnation: ps2.Incarnation}}

	// A caller that cannot wait for the lease: inc1 is left out.
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	short, err := tc.link().Reconcile(ctx, &api.ReconcileRequest{Segment: h.Seg, MountEpoch: h.Epoch, Objects: refs})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(leaseEnd) && len(short.NotLive) != 0 {
		t.Fatalf("reconcile named %v not live during inc1's lease", short.NotLive)
	}

	// A caller that can: the answer comes after the lease and names inc1.
	if _, err := tc.get("k"); err != nil { // inc2 leased now; inc1 no longer answered
		t.Fatal(err)
	}
	notLive, err := h.reconcile(refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(notLive) != 1 || notLive[0] != refs[0] || time.Now().Before(leaseEnd) {
		t.Fatalf("reconcile answered %v (%v before inc1's lease ended), want inc1 after it", notLive, time.Until(leaseEnd))
	}
}

// The cluster's first leader has no predecessor whose leases it must
// respect, so a fresh cluster deletes at once; a restarted node (the same
// cluster, a new master epoch) does not know what it leased before its
// restart and waits one lease period.
func TestLeaseFloorOnlyAfterAnEarlierLeader(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) { c.LeaseTTL = 5 * time.Second })
	h := tc.mountHolder(t, "seg-a", "")
	tc.put(t, "k", 10, 1)
	if err := tc.remove("k"); err != nil {
		t.Fatal(err)
	}
	if tasks := h.fetch(t, 0, 0); len(tasks) != 1 {
		t.Fatalf("the first leader withheld %v: no earlier leader could have leased anything", tasks)
	}
	tc.stop(0)
	tc.start(0)
	tc.waitLeader(t)
	h.wantNoTasks(t, "a restarted leader handed out %v within its first lease period")
}

// BatchGet leases what it answers as Get does; keys it does not find
// lease nothing.
func TestBatchGetLeasesWhatItAnswers(t *testing.T) {
	tc := startCluster(t, 1, shortLeases)
	h := tc.mountHolder(t, "seg-a", "")
	ps1 := tc.put(t, "k", 10, 1)
	tc.put(t, "other", 10, 1)
	var resp api.BatchGetResponse
	if err := tc.call(api.MethodBatchGet, &api.KeysRequest{Keys: []string{"missing", "k"}}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Results[0].Err == nil || resp.Results[1].Object == nil || resp.Results[1].Object.Incarnation != ps1.Incarnation {
		t.Fatalf("batch get: %+v", resp.Results)
	}
	tc.put(t, "k", 10, 1) // supersedes the incarnation the BatchGet answered
	if err := tc.remove("other"); err != nil {
		t.Fatal(err)
	}
	tasks := h.fetch(t, 0, 0)
	if len(tasks) != 1 || tasks[0].Key != "other" {
		t.Fatalf("fetched %v; want only the task of the unleased key", tasks)
	}
	h.ack(t, tasks, ackAll(api.AckRemoved))
	if tasks := h.fetch(t, 0, 5*time.Second); len(tasks) != 1 || tasks[0].Incarnation != ps1.Incarnation {
		t.Fatalf("after the lease: %v, want the task of the incarnation the BatchGet answered", tasks)
	}
}

// armedHook is a test hook set when the cluster starts and armed with its
// action later, while the cluster runs.
type armedHook struct{ f atomic.Pointer[func()] }

func (h *armedHook) arm(f func()) {
	if f == nil {
		h.f.Store(nil)
		return
	}
	h.f.Store(&f)
}

func (h *armedHook) run() {
	if f := h.f.Load(); f != nil {
		(*f)()
	}
}

// getResult is what a Get answered.
type getResult struct {
	obj *api.ObjectInfo
	err error
}

// getAsync gets key in a goroutine; the answer comes on the channel.
func (tc *testCluster) getAsync(key string) <-chan getResult {
	got := make(chan getResult, 1)
	go func() {
		obj, err := tc.get(key)
		got <- getResult{obj, err}
	}()
	return got
}
