package rebuild

import (
	"testing"

	"sexton/api"
)

func evicted(key string, low uint64) api.HolderRecord {
	r := dead(key, low)
	r.Evicted = true
	return r
}

// An evicted copy is no evidence of removal: an incarnation live on one
// holder and evicted on another is adopted from the live copy, and the
// evicted copy gets neither a replica nor a delete task. A removed copy
// still keeps the incarnation out, alone or beside an eviction; an
// incarnation evicted everywhere has nothing to adopt.
func TestMergeEvictedCopyIsNotARemoval(t *testing.T) {
	p, err := Merge([]Scan{
		// a: live on A, evicted on B → adopted from A.
		// b: live on A, removed on B → dropped, A's copy deleted.
		// c: live on A, evicted on B, removed on C → dropped.
		// d: evicted on A and B → nothing to adopt.
		// e: the newer 20 evicted on B, live on A; the older 10 live on B.
		scan("A", live("a", 5, 10, 1), live("b", 6, 11, 2), live("c", 7, 12, 3), evicted("d", 8), live("e", 20, 4, 4)),
		scan("B", evicted("a", 5), dead("b", 6), evicted("c", 7), evicted("d", 8), live("e", 10, 3, 3), evicted("e", 20)),
		scan("C", dead("c", 7)),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan(t, p, objects, "a@5:A e@20:A", "A/b@6 A/c@7 B/e@10", "b,c,d")
}
