package master

import (
	"context"
	"fmt"
	"testing"

	"sexton/api"
)

func TestParsePeers(t *testing.T) {
	p, err := ParsePeers("m1=127.0.0.1:7001, m2=127.0.0.1:7002")
	if err != nil || len(p) != 2 || p[1].ID != "m2" || p[1].RaftAddr != "127.0.0.1:7002" {
		t.Fatalf("%v %v", p, err)
	}
	for _, bad := range []string{"m1", "=x", "m1=a,m1=b"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestPlacementSeesSegmentChanges: the leader's cached segment list
// (placementSegments) follows a mount and an unmount at once: a put right
// after an unmount never lands on the unmounted segment, and one right
// after a mount may land on the new one.
func TestPlacementSeesSegmentChanges(t *testing.T) {
	tc := startCluster(t, 1, func(*Config) {})
	n := tc.waitLeader(t)
	a := tc.mountHolder(t, "seg-a", "")
	tc.put(t, "cache/warm", 10, 1) // fills the cache
	if segs := n.placementSegments(); len(segs) != 1 || segs[0].ID != "seg-a" {
		t.Fatalf("cached segments %v, want seg-a alone", segs)
	}
	tc.mountHolder(t, "seg-b", "")
	if segs := n.placementSegments(); len(segs) != 2 {
		t.Fatalf("after mounting seg-b the cache holds %d segments", len(segs))
	}
	if err := tc.link().Unmount(context.Background(), &api.UnmountLocalDiskRequest{Segment: a.Seg, MountEpoch: a.Epoch}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		resp := tc.put(t, fmt.Sprintf("cache/after-unmount-%d", i), 10, 1)
		for _, r := range resp.Replicas {
			if r.Segment == "seg-a" {
				t.Fatalf("put %d placed on the unmounted seg-a", i)
			}
		}
	}
}
