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
	if got, want := objects(p), "a@5:A e@20:A"; got != want {
		t.Errorf("objects %q, want %q", got, want)
	}
	if got, want := deletes(p), "A/b@6 A/c@7 B/e@10"; got != want {
		t.Errorf("deletes %q, want %q", got, want)
	}
	var dropped []string
	for _, d := range p.Dropped {
		dropped = append(dropped, d.Key)
	}
	if len(dropped) != 3 || dropped[0] != "b" || dropped[1] != "c" || dropped[2] != "d" {
		t.Errorf("dropped %v, want b c d", dropped)
	}
}
