package fsm

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"sexton/api"
)

// listAll pages through List with limit and returns every key seen, in
// the order seen, failing if a page breaks the cursor contract.
func listAll(t *testing.T, f *FSM, prefix, cursor string, limit int) []string {
	t.Helper()
	var got []string
	for pages := 0; ; pages++ {
		objs, next := f.List(prefix, cursor, limit)
		if len(objs) > limit {
			t.Fatalf("page of %d objects, limit %d", len(objs), limit)
		}
		for _, o := range objs {
			got = append(got, o.Key)
		}
		if next == "" {
			return got
		}
		if len(objs) != limit || next != objs[len(objs)-1].Key {
			t.Fatalf("next %q after a page of %d (limit %d) ending %v", next, len(objs), limit, got[len(got)-1:])
		}
		if pages > 1000 {
			t.Fatal("List does not terminate")
		}
		cursor = next
	}
}

// TestListPagesCoverPrefixOnce: whatever the page size and wherever the
// cursor starts (before the prefix's keys, inside them on a key that does
// not exist, past them), the pages list exactly the COMPLETE keys under
// the prefix after the cursor, each once, in key order; keys beside the
// prefix (one sorting just before and just after it), puts in progress and
// removed keys are never listed.
func TestListPagesCoverPrefixOnce(t *testing.T) {
	h := newMounted(t, 1000)
	var want []string
	for i := range 40 {
		k := fmt.Sprintf("p/%03d", i)
		h.put(k, "s1")
		if i%10 == 3 {
			h.remove(k)
			continue
		}
		want = append(want, k)
	}
	for _, k := range []string{"p", "p.", "p0", "o/1", "q/1"} { // '.' < '/' < '0'
		h.put(k, "s1")
	}
	h.putStart("p/100", false, "s1") // pending only: not listed
	for _, f := range []*FSM{h.f, restored(t, h.f)} {
		for _, limit := range []int{1, 2, 7, 36, 37, 1000} {
			for _, c := range []struct{ cursor string }{{""}, {"o/9"}, {"p/"}, {"p/0155"}, {"p/039"}, {"p/zzz"}, {"q"}} {
				var exp []string
				for _, k := range want {
					if k > c.cursor {
						exp = append(exp, k)
					}
				}
				if got := listAll(t, f, "p/", c.cursor, limit); !slices.Equal(got, exp) {
					t.Fatalf("limit %d cursor %q: listed %v\nwant %v", limit, c.cursor, got, exp)
				}
			}
		}
	}
	if got := listAll(t, h.f, "", "", 3); len(got) != len(want)+5 || !slices.IsSorted(got) {
		t.Fatalf("listing everything gave %d keys (sorted %v), want %d", len(got), slices.IsSorted(got), len(want)+5)
	}
}

// TestListCursorSurvivesChanges: keys are removed, added, overwritten and
// given puts in progress between pages (and the state is once restored
// from a snapshot mid-listing). Every key present throughout is listed
// exactly once; nothing is listed twice or out of order; every key listed
// was present (COMPLETE, under the prefix) when its page was read.
func TestListCursorSurvivesChanges(t *testing.T) {
	h := newMounted(t, 100000)
	rng := rand.New(rand.NewSource(1))
	present := map[string]bool{} // COMPLETE keys now
	touched := map[string]bool{} // removed (or re-added) at some point
	key := func() string { return fmt.Sprintf("k/%04d", rng.Intn(2000)) }
	for range 600 {
		k := key()
		if !present[k] {
			h.put(k, "s1")
			present[k] = true
		}
	}
	h.put("j/1", "s1")
	h.put("l/1", "s1")
	initial := presentKeys(present)
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		objs, next := h.f.List("k/", cursor, 9)
		for _, o := range objs {
			if !present[o.Key] || !strings.HasPrefix(o.Key, "k/") {
				t.Fatalf("listed %q, which is not a COMPLETE key under the prefix", o.Key)
			}
			seen = append(seen, o.Key)
		}
		if next == "" {
			break
		}
		cursor = next
		for range 6 {
			k := key()
			switch op := rng.Intn(4); {
			case present[k] && op == 0:
				if r := h.remove(k); r.Results[0].Err != nil {
					t.Fatal(r.Results[0].Err)
				}
				present[k], touched[k] = false, true
			case present[k] && op == 1:
				h.put(k, "s1") // overwrite: present throughout
			case present[k] && op == 2:
				h.putStart(k, false, "s1") // a put in progress over a COMPLETE key
			case !present[k]:
				if h.putStart(k, false, "s1").Err == nil {
					h.putEnd(k, h.f.st.objects.get(k).pending.inc)
					present[k], touched[k] = true, true
				}
			}
		}
		if pages == 20 {
			h.f = restored(t, h.f)
		}
	}
	if !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != len(seen) {
		t.Fatalf("keys listed out of order or twice: %v", seen)
	}
	for _, k := range initial {
		if !touched[k] && !slices.Contains(seen, k) {
			t.Fatalf("%q was present throughout but not listed", k)
		}
	}
}

func presentKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestPendingPutsFollowPuts: PendingPuts answers from its index exactly
// the puts in progress created before the bound (an ended, revoked or
// overwritten-by-a-new-start put leaves it; a restore rebuilds it), by key.
func TestPendingPutsFollowPuts(t *testing.T) {
	h := newMounted(t, 100)
	incs := map[string]api.ObjectIncarnation{}
	for _, k := range []string{"z", "y", "x", "w", "v"} { // created in reverse key order
		incs[k] = h.putStart(k, false, "s1").Incarnation
	}
	cut := h.now
	h.putStart("a", false, "s1")
	h.putEnd("y", incs["y"])
	h.revoke("x", incs["x"])
	keys := func(pp []PendingPut) string {
		var ks []string
		for _, p := range pp {
			ks = append(ks, p.Key)
		}
		return strings.Join(ks, " ")
	}
	for _, f := range []*FSM{h.f, restored(t, h.f)} {
		pp := f.PendingPuts(cut)
		if got := keys(pp); got != "v w z" {
			t.Fatalf("PendingPuts before the cut = %q, want \"v w z\"", got)
		}
		if pp[2].Incarnation != incs["z"] {
			t.Fatalf("PendingPuts gave z incarnation %s, want %s", pp[2].Incarnation, incs["z"])
		}
		if got := keys(f.PendingPuts(h.now + 1)); got != "a v w z" {
			t.Fatalf("PendingPuts of all = %q", got)
		}
	}
}

// TestListLimitBounded: a limit above MaxListLimit (or none) gives a
// bounded page and a cursor to the rest. The objects are stored directly,
// not applied: 10,001 puts under the race detector's per-entry invariant
// check would take minutes.
func TestListLimitBounded(t *testing.T) {
	f := New(Config{})
	obj := f.st.newObject("", "", localReplicas("s1"), 0, 0, api.ObjectIncarnation{})
	for i := range MaxListLimit + 1 {
		k := fmt.Sprintf("k/%06d", i)
		f.st.objects.set(k, entry{}, entry{complete: obj})
	}
	for _, limit := range []int{0, MaxListLimit + 1, 1 << 40} {
		objs, next := f.List("", "", limit)
		want := min(MaxListLimit, max(limit, 0))
		if limit <= 0 {
			want = DefaultListLimit
		}
		if len(objs) != want || next != objs[len(objs)-1].Key {
			t.Fatalf("limit %d: %d objects, next %q; want %d and a cursor", limit, len(objs), next, want)
		}
	}
}
