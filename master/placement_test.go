package master

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"sexton/api"
)

func segs(specs ...[3]string) []api.SegmentInfo {
	var out []api.SegmentInfo
	for _, s := range specs {
		out = append(out, api.SegmentInfo{ID: api.SegmentID(s[0]), Pool: s[1], Mounted: s[2] != "unmounted", Capacity: 1000})
	}
	return out
}

func TestPlacementPicksDistinctLiveHoldersOfOnePool(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newSoftState()
	all := segs([3]string{"a1", "A", ""}, [3]string{"a2", "A", ""}, [3]string{"a3", "A", ""}, [3]string{"b1", "B", ""}, [3]string{"b2", "B", "unmounted"})
	for _, id := range []api.SegmentID{"a1", "a2", "a3", "b1", "b2"} {
		s.heartbeat(id, 0, 1000, 0, now)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		got, err := place(all, s, 10*time.Second, now, 10, 2, "", rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID == got[1].ID || got[0].Pool != got[1].Pool || got[0].Pool != "A" {
			t.Fatalf("placement %v: want two distinct holders of pool A (B has one mounted)", got)
		}
	}
	// A holder whose heartbeat is older than the TTL is not placed on.
	s.heartbeat("a3", 0, 1000, 0, now.Add(-time.Minute))
	for i := 0; i < 50; i++ {
		got, _ := place(all, s, 10*time.Second, now, 10, 2, "", rng)
		for _, g := range got {
			if g.ID == "a3" {
				t.Fatalf("placed on a holder without a recent heartbeat")
			}
		}
	}
	if _, err := place(all, s, 10*time.Second, now, 10, 3, "", rng); api.CodeOf(err) != api.CodeNoSpace {
		t.Fatalf("three replicas with two live holders per pool: %v, want NO_SPACE", err)
	}
	if _, err := place(all, s, 10*time.Second, now, 2000, 1, "", rng); api.CodeOf(err) != api.CodeNoSpace {
		t.Fatalf("an object larger than every holder's free space: %v, want NO_SPACE", err)
	}
	got, err := place(all, s, 10*time.Second, now, 10, 1, "B", rng)
	if err != nil || got[0].ID != "b1" {
		t.Fatalf("pool B only: %v %v", got, err)
	}
}

func TestPlacementWeightsPoolsByFreeCapacity(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newSoftState()
	all := segs([3]string{"a", "A", ""}, [3]string{"b", "B", ""})
	s.heartbeat("a", 900, 1000, 0, now) // 100 free
	s.heartbeat("b", 100, 1000, 0, now) // 900 free
	rng := rand.New(rand.NewPCG(3, 4))
	counts := map[string]int{}
	for i := 0; i < 2000; i++ {
		got, err := place(all, s, 10*time.Second, now, 1, 1, "", rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[got[0].Pool]++
	}
	if counts["B"] < 4*counts["A"] {
		t.Fatalf("pool with 9x the free space chosen %d times vs %d", counts["B"], counts["A"])
	}
}

func TestLeaseFloorCoversEveryObjectAfterFailover(t *testing.T) {
	s := newSoftState()
	now := time.Unix(1000, 0)
	s.beginTerm(now.Add(10 * time.Second))
	neverRead := api.ObjectRef{Key: "never-read", Incarnation: api.ObjectIncarnation{High: 1, Low: 7}}
	if !s.leased(neverRead, now.Add(5*time.Second)) || !s.leasedKey("never-read", now.Add(5*time.Second)) {
		t.Fatal("a new leader must treat every object as leased for one lease period")
	}
	if s.leased(neverRead, now.Add(11*time.Second)) {
		t.Fatal("the floor must expire")
	}
	k1 := api.ObjectRef{Key: "k", Incarnation: api.ObjectIncarnation{High: 1, Low: 1}}
	k2 := api.ObjectRef{Key: "k", Incarnation: api.ObjectIncarnation{High: 1, Low: 2}}
	s.grantLease(k1, now.Add(20*time.Second))
	if !s.leased(k1, now.Add(15*time.Second)) || s.leased(k1, now.Add(21*time.Second)) {
		t.Fatal("a granted lease covers exactly its period")
	}
	if s.leased(k2, now.Add(15*time.Second)) {
		t.Fatal("a lease covers the incarnation read, not the key's other incarnations")
	}
	if !s.leasedKey("k", now.Add(15*time.Second)) {
		t.Fatal("a key with a leased incarnation is leased for key-only checks")
	}
}

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

func TestExpiredLeasesAreSweptAndLiveOnesKept(t *testing.T) {
	s := newSoftState()
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	for i := 0; i < minLeaseSweep; i++ {
		s.grantLease(api.ObjectRef{Key: fmt.Sprintf("old%d", i)}, past)
	}
	s.grantLease(api.ObjectRef{Key: "live"}, future) // reaches the threshold: the sweep runs
	if len(s.leases) != 1 || len(s.keyLeases) != 1 || !s.leased(api.ObjectRef{Key: "live"}, time.Now()) {
		t.Fatalf("after the sweep %d leases remain; want only the live one", len(s.leases))
	}
	if s.sweepAt != minLeaseSweep {
		t.Fatalf("next sweep at %d, want %d", s.sweepAt, minLeaseSweep)
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
	if err := tc.call(api.MethodUnmountLocalDisk, &api.UnmountLocalDiskRequest{Segment: a.Seg, MountEpoch: a.Epoch}, &api.Empty{}); err != nil {
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
