package testutil

import "testing"

// Overlap finds ranges sharing a byte of one file, and only those:
// adjacent ranges and ranges of different files are disjoint.
func TestOverlap(t *testing.T) {
	disjoint := []FileRange{
		{Who: "b", Path: "f1", Off: 100, Size: 50},
		{Who: "a", Path: "f1", Off: 0, Size: 100},
		{Who: "c", Path: "f2", Off: 0, Size: 500},
	}
	if a, b, ok := Overlap(disjoint); ok {
		t.Fatalf("Overlap found %+v and %+v in disjoint ranges", a, b)
	}
	over := append(disjoint, FileRange{Who: "d", Path: "f1", Off: 149, Size: 10})
	a, b, ok := Overlap(over)
	if !ok || a.Who != "b" || b.Who != "d" {
		t.Fatalf("Overlap = %+v, %+v, %v; want b then d", a, b, ok)
	}
}
