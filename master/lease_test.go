package master

import (
	"slices"
	"testing"
	"time"

	"sexton/api"
)

// leaseTTL is the read lease of the lease tests: long enough for a test's
// steps, short enough to wait out.
const leaseTTL = 600 * time.Millisecond

func shortLeases(c *Config) { c.LeaseTTL = leaseTTL }

// waitLeaseFloor waits until the leader's new-term lease floor (every
// incarnation leased for one period after it became leader) has passed.
func (tc *testCluster) waitLeaseFloor(t testing.TB) {
	t.Helper()
	n := tc.waitLeader(t)
	n.soft.mu.Lock()
	floor := n.soft.leaseFloor
	n.soft.mu.Unlock()
	time.Sleep(time.Until(floor) + 10*time.Millisecond)
}

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
	tc := startCluster(t, 1, shortLeases)
	h := tc.mountHolder(t, "seg-a", "")
	ps := tc.put(t, "k", 10, 1)
	ref := api.ObjectRef{Key: "k", Incarnation: ps.Incarnation}
	tc.waitLeaseFloor(t)

	checked, release := make(chan struct{}), make(chan struct{})
	testHookAfterEvictCheck = func() { close(checked); <-release }
	defer func() { testHookAfterEvictCheck = nil }()

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

	type getResult struct {
		obj *api.ObjectInfo
		err error
	}
	got := make(chan getResult, 1)
	go func() {
		obj, err := tc.get("k")
		got <- getResult{obj, err}
	}()
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
	testHookAfterEvictCheck = nil
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
