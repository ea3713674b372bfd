package dfsalloc

import (
	"errors"
	"testing"

	"sexton/api"
)

// restoreRoundTrip checks that a's records restore into an equal
// allocator (the adopted units are ordinary state).
func restoreRoundTrip(t *testing.T, a Allocator) {
	t.Helper()
	b := mustNew(t, a.Config())
	if err := b.Restore(a.Records()); err != nil {
		t.Fatalf("restore after adoption: %v", err)
	}
}

// A bucket a rebuild adopts from the DFS root is created sealed with its
// file ready: allocations go to a new bucket after it, never into it, and
// an overlapping adoption is refused.
func TestBucketAdoptRegistersRangesNoAllocationOverlaps(t *testing.T) {
	a := mustNew(t, bucketConfig(64*kb, 8))
	d := api.DFSDescriptor{Allocator: KindBucket, Path: BucketPath(3), UnitID: 3, Offset: 8 * kb, Size: 5000, AlignedSize: 8 * kb}
	must(t, a.Adopt("k", d, t0))
	must(t, a.Adopt("k", d, t0)) // a repeat
	if err := a.Adopt("other", d, t0); !errors.Is(err, ErrDescriptorMismatch) {
		t.Fatalf("another key at the same range: %v", err)
	}
	over := d
	over.Offset, over.Size, over.AlignedSize = 12*kb, 100, 4*kb
	if err := a.Adopt("o", over, t0); !errors.Is(err, ErrDescriptorMismatch) {
		t.Fatalf("an overlapping range: %v", err)
	}
	bad := d
	bad.AlignedSize = 4 * kb
	if err := a.Adopt("b", bad, t0); err == nil {
		t.Fatal("an aligned size that is not the size's was adopted")
	}
	st := a.Stats()
	if len(st.Units) != 1 || st.Units[0].State != UnitSealed || st.Units[0].File != FileReady || st.LiveEntries != 1 || st.NextBucketID != 4 {
		t.Fatalf("stats after adoption: %+v", st)
	}
	got := mustAlloc(t, a, t0, req("new", 100))
	if got[0].UnitID != 4 {
		t.Fatalf("new allocation in bucket %d; want 4, after the adopted one", got[0].UnitID)
	}
	low := api.DFSDescriptor{Allocator: KindBucket, Path: BucketPath(1), UnitID: 1, Offset: 0, Size: 10, AlignedSize: 4 * kb}
	must(t, a.Adopt("low", low, t0))
	if st := a.Stats(); st.NextBucketID != 5 || len(st.Units) != 3 {
		t.Fatalf("a lower adopted id must not move the next id back: %+v", st)
	}
	must(t, a.Free("k", d, t0))
	restoreRoundTrip(t, a)
}

// A shard range a rebuild adopts leaves the free list: first fit never
// hands it out again. The shard must be the key's.
func TestShardAdoptTakesRangeFromFreeList(t *testing.T) {
	a := mustNew(t, shardConfig(1, 64*kb))
	d := api.DFSDescriptor{Allocator: KindShard, Path: ShardPath(0, 1), UnitID: 0, Offset: 0, Size: 100, AlignedSize: 4 * kb}
	must(t, a.Adopt("k", d, t0))
	must(t, a.Adopt("k", d, t0))
	got := mustAlloc(t, a, t0, req("n", 100))
	if got[0].Offset != 4*kb {
		t.Fatalf("allocation at %d overlaps the adopted range [0, 4096)", got[0].Offset)
	}
	if err := a.Adopt("x", api.DFSDescriptor{Allocator: KindShard, Path: ShardPath(0, 1), UnitID: 0, Offset: 4 * kb, Size: 1, AlignedSize: 4 * kb}, t0); !errors.Is(err, ErrDescriptorMismatch) {
		t.Fatalf("adopting an allocated range: %v", err)
	}
	if st := a.Stats(); st.Units[0].File != FileReady {
		t.Fatalf("adopted shard file %v; want ready", st.Units[0].File)
	}
	two := mustNew(t, shardConfig(2, 64*kb))
	key := "k"
	wrong := 1 - ShardOf(key, 2)
	if err := two.Adopt(key, api.DFSDescriptor{Allocator: KindShard, Path: ShardPath(wrong, 2), UnitID: uint64(wrong), Size: 1, AlignedSize: 4 * kb}, t0); err == nil {
		t.Fatal("a key adopted into another key's shard")
	}
	restoreRoundTrip(t, a)
}
