package fsm

import (
	"slices"
	"testing"

	"sexton/api"
)

// TestReconcileSaysWhatItCannotDecideYet: a copy that waits for an older
// incarnation's delete task, and one in a live incarnation block, are
// left out of the not-live answer and listed as undecided, so the holder
// asks again; a copy of nothing the table knows is named at once.
func TestReconcileSaysWhatItCannotDecideYet(t *testing.T) {
	h, epoch := newMountedEpoch(t, DefaultRegistryCapacity)
	first := h.put("k", "s1")
	second := h.put("k", "s1") // a delete task of first on s1
	h.remove("k")              // and one of second, behind it
	r := h.apply(&ReserveIncarnations{Count: 4, Expires: h.now + 1e9, Now: h.now}).(*ReserveResult)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	withheld := api.ObjectRef{Key: "k", Incarnation: second}
	inBlock := api.ObjectRef{Key: "b", Incarnation: api.ObjectIncarnation{High: h.cluster, Low: r.Lo}}
	stray := api.ObjectRef{Key: "gone", Incarnation: first}
	notLive, undecided, err := h.f.Reconcile("s1", epoch, []api.ObjectRef{withheld, inBlock, stray})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(notLive, []api.ObjectRef{stray}) {
		t.Fatalf("not live %v, want only %v", notLive, stray)
	}
	if !slices.Equal(undecided, []api.ObjectRef{withheld, inBlock}) {
		t.Fatalf("undecided %v, want %v and %v", undecided, withheld, inBlock)
	}
}
