package master

import (
	"testing"
	"time"

	"sexton/api"
)

// A holder that died less than HolderTTL ago is still placed on. Such a
// put must not fail outright: the client's write to the dead holder
// fails, it revokes the put and starts it again excluding that holder,
// and that put completes elsewhere. Once the TTL has passed without a
// heartbeat, the dead holder is not placed on at all.
func TestPutOnARecentlyDeadHolderIsPlacedAgainElsewhere(t *testing.T) {
	const holderTTL = 2 * time.Second
	tc := startCluster(t, 1, func(c *Config) { c.HolderTTL = holderTTL })
	a := tc.mountHolder(t, "seg-a", "")
	b := tc.mountHolder(t, "seg-b", "")
	a.die()
	died := time.Now()

	for i := 0; i < 5; i++ {
		// The dead holder is still live to the leader: a put lands there.
		ps := tc.putStartExcluding(t, "k", b.Seg, a.Seg)
		// The client's write fails: it revokes, which must succeed though
		// the holder is gone (the revoke only queues a delete task).
		if err := tc.call(api.MethodPutRevoke, &api.PutRevokeRequest{Key: "k", Incarnation: ps.Incarnation}, &api.Empty{}); err != nil {
			t.Fatalf("revoke of the put on the dead holder: %v", err)
		}
		// ... and starts again away from it.
		ps2 := tc.putStartExcluding(t, "k", a.Seg, b.Seg)
		if err := tc.call(api.MethodPutEnd, &api.PutEndRequest{Key: "k", Incarnation: ps2.Incarnation}, &api.Empty{}); err != nil {
			t.Fatalf("PutEnd of the put placed again: %v", err)
		}
		obj, err := tc.get("k")
		if err != nil || obj.Incarnation != ps2.Incarnation || !onSegment(obj, b.Seg) || onSegment(obj, a.Seg) {
			t.Fatalf("get after the retried put: %+v %v", obj, err)
		}
	}
	if time.Since(died) >= holderTTL {
		t.Fatalf("the puts took %v, longer than the holder TTL %v: the test proved nothing about a recent death", time.Since(died), holderTTL)
	}

	// Past the TTL the dead holder is not live: never placed on, and a put
	// that could only go there fails with NO_SPACE.
	time.Sleep(time.Until(died.Add(holderTTL + 100*time.Millisecond)))
	for i := 0; i < 20; i++ {
		ps := tc.put(t, "after", 10, 1)
		if ps.Replicas[0].Segment != b.Seg {
			t.Fatalf("placed on %s after its heartbeats stopped for longer than the TTL", ps.Replicas[0].Segment)
		}
	}
	if _, err := tc.putStart(&api.PutStartRequest{Key: "x", Size: 10, ReplicaNum: 1, Exclude: []api.SegmentID{b.Seg}}); api.CodeOf(err) != api.CodeNoSpace {
		t.Fatalf("a put only the dead holder could take: %v, want NO_SPACE", err)
	}
	// A heartbeat brings it back.
	if _, err := a.heartbeat(); err != nil {
		t.Fatal(err)
	}
	tc.putStartExcluding(t, "x", b.Seg, a.Seg)
}

// putStartExcluding starts a put of key, one replica of 10 bytes,
// excluding segment exclude, and fails unless it is placed on want.
func (tc *testCluster) putStartExcluding(t *testing.T, key string, exclude, want api.SegmentID) *api.PutStartResponse {
	t.Helper()
	ps, err := tc.putStart(&api.PutStartRequest{Key: key, Size: 10, ReplicaNum: 1, Exclude: []api.SegmentID{exclude}})
	if err != nil {
		t.Fatalf("put of %s excluding %s: %v", key, exclude, err)
	}
	if ps.Replicas[0].Segment != want {
		t.Fatalf("put of %s excluding %s placed on %s, want %s", key, exclude, ps.Replicas[0].Segment, want)
	}
	return ps
}
