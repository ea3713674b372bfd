package holder

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sexton/api"
)

// TestKnownSegmentsRecordedForTheMarkersClusterOnly: the ids are kept only
// for the cluster the marker names, read back after a reopen, written
// through the two sync sites (file, then directory), and a damaged file
// fails the open closed.
func TestKnownSegmentsRecordedForTheMarkersClusterOnly(t *testing.T) {
	s, dir := openTemp(t)
	if err := s.SetKnownSegments(7, []api.SegmentID{"a"}); !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("before the marker names a cluster: %v, want ErrClusterMismatch", err)
	}
	if err := s.BindCluster(7); err != nil {
		t.Fatal(err)
	}
	if s.KnownSegments() != nil || s.KnownSegmentsDigest() != 0 {
		t.Fatalf("a fresh store reports %v", s.KnownSegments())
	}
	if err := s.SetKnownSegments(8, []api.SegmentID{"a"}); !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("another cluster's segments: %v, want ErrClusterMismatch", err)
	}
	ids := []api.SegmentID{"b", "a", "b"}
	if err := s.SetKnownSegments(7, ids); err != nil {
		t.Fatal(err)
	}
	if got := s.KnownSegments(); !slices.Equal(got, []api.SegmentID{"a", "b"}) {
		t.Fatalf("recorded %v", got)
	}
	if s.KnownSegmentsDigest() != api.SegmentSetDigest(ids) {
		t.Fatal("digest differs from the set's")
	}
	if _, err := os.Stat(filepath.Join(dir, knownSegmentsTmpName)); !os.IsNotExist(err) {
		t.Fatalf("tmp file left behind: %v", err)
	}
	s.Close()
	s = openT(t, dir, StoreOptions{})
	if got := s.KnownSegments(); !slices.Equal(got, []api.SegmentID{"a", "b"}) {
		t.Fatalf("after reopen %v", got)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, KnownSegmentsFileName), []byte(`{"v":1,"cluster_id":7,"segments":["a"],"x":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a damaged segments file: %v, want ErrCorrupt", err)
	}
}
