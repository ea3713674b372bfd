package rebuild

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
)

// TestBatchesBoundItemsAndBytes: Batches keeps every object and delete,
// in order (objects first), with at most n items an entry, and starts a
// new entry once one reaches MaxBatchBytes of estimated size.
func TestBatchesBoundItemsAndBytes(t *testing.T) {
	p := &Plan{}
	for i := range 10 {
		p.Objects = append(p.Objects, api.RebuildObject{Key: fmt.Sprintf("o%d", i)})
	}
	for i := range 5 {
		p.Deletes = append(p.Deletes, api.RebuildDelete{Key: fmt.Sprintf("d%d", i)})
	}
	var got []string
	var sizes []int
	for _, b := range p.Batches(4) {
		sizes = append(sizes, len(b.Objects)+len(b.Deletes))
		for _, o := range b.Objects {
			got = append(got, o.Key)
		}
		for _, d := range b.Deletes {
			got = append(got, d.Key)
		}
	}
	if want := "o0 o1 o2 o3 o4 o5 o6 o7 o8 o9 d0 d1 d2 d3 d4"; strings.Join(got, " ") != want {
		t.Errorf("items %q, want %q", strings.Join(got, " "), want)
	}
	if fmt.Sprint(sizes) != "[4 4 4 3]" {
		t.Errorf("entries of %v items, want [4 4 4 3]", sizes)
	}

	// Three objects with half-MiB keys: the second fills the first entry
	// past MaxBatchBytes, so the third starts another, whatever n allows.
	big := strings.Repeat("k", MaxBatchBytes/2)
	p = &Plan{Objects: []api.RebuildObject{{Key: big + "1"}, {Key: big + "2"}, {Key: big + "3"}}}
	bs := p.Batches(1000)
	if len(bs) != 2 || len(bs[0].Objects) != 2 || len(bs[1].Objects) != 1 {
		t.Errorf("half-MiB keys cut into %d entries (first of %d), want 2 entries of 2 and 1", len(bs), len(bs[0].Objects))
	}
	if len((&Plan{}).Batches(4)) != 0 {
		t.Errorf("an empty plan made entries")
	}
}
