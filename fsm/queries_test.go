package fsm

import (
	"errors"
	"strings"
	"testing"

	"sexton/api"
)

// TestListPagesInKeyOrder: COMPLETE objects with the prefix, strictly after
// the cursor, in key order, with a cursor while more follow; pending puts
// and removed keys are not listed.
func TestListPagesInKeyOrder(t *testing.T) {
	h := newMounted(t, 100)
	for _, k := range []string{"a/3", "a/1", "b/1", "a/2", "a/4"} {
		h.put(k, "s1")
	}
	h.putStart("a/0", false, "s1") // pending only
	h.remove("a/4")
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		objs, next := h.f.List("a/", cursor, 2)
		for _, o := range objs {
			got = append(got, o.Key)
		}
		if next == "" {
			break
		}
		if pages > 3 {
			t.Fatal("List does not terminate")
		}
		cursor = next
	}
	if want := "a/1 a/2 a/3"; strings.Join(got, " ") != want {
		t.Fatalf("listed %q, want %q", strings.Join(got, " "), want)
	}
}

// TestPendingPutsAndGetCopies: PendingPuts lists puts in progress older
// than the bound, by key; Get returns copies the caller may modify.
func TestPendingPutsAndGetCopies(t *testing.T) {
	h := newMounted(t, 100)
	h.put("done", "s1")
	h.putStart("z", false, "s1")
	h.putStart("m", false, "s1")
	cut := h.now
	h.putStart("late", false, "s1")
	pp := h.f.PendingPuts(cut)
	if len(pp) != 2 || pp[0].Key != "m" || pp[1].Key != "z" {
		t.Fatalf("PendingPuts = %+v", pp)
	}
	v, err := h.f.Get("done")
	if err != nil {
		t.Fatal(err)
	}
	v.Replicas[0].Segment = "mutated"
	if again, _ := h.f.Get("done"); again.Replicas[0].Segment != "s1" {
		t.Fatal("Get returned internal state")
	}
	if _, err := h.f.Get("m"); !errors.Is(err, api.ErrObjectNotFound) {
		t.Fatalf("Get of a pending-only key = %v", err)
	}
	if h.f.Exists("m") || !h.f.Exists("done") {
		t.Fatal("Exists disagrees with Get")
	}
	if s, ok := h.f.SegmentOfClient("c1"); !ok || s.ID != "s1" {
		t.Fatalf("SegmentOfClient = %+v %v", s, ok)
	}
	st := h.f.Stats()
	if st.Objects != 1 || st.PendingPuts != 3 || st.ClusterID != 7 || st.MasterEpoch != 1 || st.LeaderAddr != "m1:7000" {
		t.Fatalf("Stats = %+v", st)
	}
}
