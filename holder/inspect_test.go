package holder

import (
	"testing"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
)

func TestInspectReadsOfflineWithoutChanges(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	for i, k := range []string{"a", "b", "c"} {
		mustPut(t, s, k, incN(uint64(i+1)), valueOf(k, 100))
	}
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "b", incN(2))}), api.AckRemoved)
	seg, used := s.SegmentID(), s.Usage().UsedBytes
	before := testutil.DirContents(t, dir)
	// Inspect works while the store is open (it takes no lock) ...
	rep, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	sameSnapshot(t, before, testutil.DirContents(t, dir))
	if !rep.Marked || rep.Identity.SegmentID != seg || len(rep.Buckets) != 2 || len(rep.Problems) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if rep.LiveObjects != 2 || rep.TombstonedObjects != 1 || rep.LiveBytes != 200 || rep.DeadBytes != 100 || rep.UsedBytes != used {
		t.Fatalf("totals %+v (store said used %d)", rep, used)
	}
	if rep.Buckets[0].DeadCount != 1 || rep.Buckets[0].LiveCount != 1 || rep.Buckets[1].LiveCount != 1 {
		t.Fatalf("buckets %+v", rep.Buckets)
	}
	// ... and on a directory that is not a store at all.
	empty, err := Inspect(t.TempDir())
	if err != nil || empty.Marked || len(empty.Buckets) != 0 {
		t.Fatalf("empty: %+v %v", empty, err)
	}
}

// Inspect shows the space reserve: held with its size while the file is
// there, not held once a full disk made the store release it.
func TestInspectShowsSpaceReserve(t *testing.T) {
	dir := t.TempDir()
	ff := errorfs.NewFaulty(fsys.OS{})
	ff.SetSpace(2<<20, 2<<20)
	s := openT(t, dir, StoreOptions{FS: ff, MetadataReserve: 256 << 10})
	defer s.Close()
	mustPut(t, s, "k", incN(1), []byte("v"))
	rep, err := InspectFS(ff, dir)
	if err != nil || !rep.SpaceReserveHeld || rep.SpaceReserveBytes != 256<<10 || rep.FSTotalBytes != 2<<20 || len(rep.IgnoredFiles) != 0 {
		t.Fatalf("with the reserve held: %+v %v", rep, err)
	}
	ff.TakeSpace(ff.FreeSpace())
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1))}), api.AckRemoved)
	rep, err = InspectFS(ff, dir)
	if err != nil || rep.SpaceReserveHeld || rep.SpaceReserveBytes != 0 || rep.FSFreeBytes != ff.FreeSpace() {
		t.Fatalf("after a full disk released it: %+v %v", rep, err)
	}
}
