package fsm

import (
	"testing"

	"sexton/api"
)

// TestRebuildBaseStaysWhileBlocksAreReserved: reserving incarnation blocks
// raises the base later puts add to their index, but not the rebuild's
// base, which a rerun uses to tell the serving cluster's own copies from
// the lost cluster's. With the moving base, a copy of a put this cluster
// issued and then revoked looked like a lost copy above the table's value,
// and a rerun adopted it over the value the table served.
func TestRebuildBaseStaysWhileBlocksAreReserved(t *testing.T) {
	h := newMounted(t, DefaultRegistryCapacity)
	const floor = 1 << 32
	for _, finish := range []bool{false, true} {
		if r := h.apply(&RebuildBegin{ClusterID: 7, IncFloor: floor, Finish: finish, Now: h.now}).(*RebuildBeginResult); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var own api.ObjectIncarnation
	for i := 0; i < 4; i++ {
		r := h.apply(&ReserveIncarnations{Count: 1000, Expires: h.now + 1e9, Now: h.now}).(*ReserveResult)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if i == 0 {
			own = api.ObjectIncarnation{High: 7, Low: r.Lo}
		}
	}
	if h.f.st.incBase <= floor+1000 {
		t.Fatalf("incBase %d: the reservations did not raise it", h.f.st.incBase)
	}
	check := func(f *FSM, what string) {
		t.Helper()
		if got := f.Rebuild().IncBase; got != floor {
			t.Fatalf("%s: the rebuild's base is %d, want the floor %d it was served under", what, got, floor)
		}
	}
	check(h.f, "after the reservations")
	check(restored(t, h.f), "after a snapshot round trip")

	// A copy from the first reserved block is this cluster's own: a rerun
	// may not adopt it, whatever the table says of its key.
	res := h.apply(&RebuildAdopt{ClusterID: 7, Now: h.now, Objects: []RebuildObject{{
		Key: "k", Tenant: "t", Size: 3, Incarnation: own, Replicas: localReplicas("s1"),
	}}}).(*RebuildAdoptResult)
	if len(res.Objects) != 1 || res.Objects[0].Err == nil || res.Objects[0].Err.Code != api.CodeInvalidParams {
		t.Fatalf("adopting the cluster's own copy %s: %+v, want INVALID_PARAMS", own, res.Objects)
	}
	if _, err := h.f.Get("k"); err == nil {
		t.Fatal("the cluster's own copy was adopted")
	}
}
