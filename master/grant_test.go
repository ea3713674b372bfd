package master

import (
	"bytes"
	"context"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
)

// mountGrantKey mounts h again (an identical repeat) and returns the grant
// key the answer hands the holder.
func mountGrantKey(t *testing.T, h *fakeHolder) []byte {
	t.Helper()
	resp, err := h.tc.link().Mount(context.Background(), &api.MountLocalDiskRequest{
		ClientID: h.ClientID, Segment: h.Seg, Pool: h.Pool, Capacity: h.Capacity,
		Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: "fake-" + string(h.Seg), Process: h.Process,
	})
	if err != nil {
		t.Fatalf("mount %s: %v", h.Seg, err)
	}
	if len(resp.GrantKey) != api.GrantKeyLen {
		t.Fatalf("mount answer carries a grant key of %d bytes, want %d", len(resp.GrantKey), api.GrantKeyLen)
	}
	return resp.GrantKey
}

// TestPutStartGrantsVerifyForTheirSegmentOnly: every LOCAL_DISK replica of
// a PutStart answer carries a grant that the holder of that segment
// accepts (with the key its mount answer gave it) for exactly that key and
// incarnation, and that any other segment, key or incarnation refuses.
func TestPutStartGrantsVerifyForTheirSegmentOnly(t *testing.T) {
	tc := startCluster(t, 3)
	a := tc.mountHolder(t, "seg-a", "")
	b := tc.mountHolder(t, "seg-b", "")
	key := mountGrantKey(t, a)
	if other := mountGrantKey(t, b); !bytes.Equal(key, other) {
		t.Fatal("two holders of one cluster got different grant keys")
	}
	ps, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 10, ReplicaNum: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ttl := tc.waitLeader(t).cfg.GrantTTL
	if len(ps.Replicas) != 2 {
		t.Fatalf("replicas %v, want 2", ps.Replicas)
	}
	for _, r := range ps.Replicas {
		if r.Grant == nil {
			t.Fatalf("replica on %s carries no grant", r.Segment)
		}
		if err := grant.Verify(key, r.Grant, r.Segment, "k", ps.Incarnation, 10, now); err != nil {
			t.Fatalf("grant for %s refused by its own segment: %v", r.Segment, err)
		}
		other := a.Seg
		if r.Segment == a.Seg {
			other = b.Seg
		}
		for what, err := range map[string]error{
			"another segment":     grant.Verify(key, r.Grant, other, "k", ps.Incarnation, 10, now),
			"another key":         grant.Verify(key, r.Grant, r.Segment, "k2", ps.Incarnation, 10, now),
			"another incarnation": grant.Verify(key, r.Grant, r.Segment, "k", api.ObjectIncarnation{High: ps.Incarnation.High, Low: ps.Incarnation.Low + 1}, 10, now),
			"another size":        grant.Verify(key, r.Grant, r.Segment, "k", ps.Incarnation, 11, now),
			"after it expired":    grant.Verify(key, r.Grant, r.Segment, "k", ps.Incarnation, 10, now.Add(ttl+time.Minute)),
		} {
			if api.CodeOf(err) != api.CodeGrantRefused {
				t.Fatalf("grant for %s checked for %s: %v, want %s", r.Segment, what, err, api.CodeGrantRefused)
			}
		}
	}
	// Every leader signs with the cluster's key, not one of its own.
	tc.kill(tc.leaderIndex(t))
	tc.waitLeader(t)
	ps2, err := tc.putStart(&api.PutStartRequest{Key: "k3", Size: 10, ReplicaNum: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := ps2.Replicas[0]
	if err := grant.Verify(key, r.Grant, r.Segment, "k3", ps2.Incarnation, 10, time.Now()); err != nil {
		t.Fatalf("grant of the next leader refused: %v", err)
	}
}

// TestPutStartExcludeAvoidsSegments: placement never picks an excluded
// segment, and fails rather than use one.
func TestPutStartExcludeAvoidsSegments(t *testing.T) {
	tc := startCluster(t, 1)
	tc.mountHolder(t, "seg-a", "")
	tc.mountHolder(t, "seg-b", "")
	for i := 0; i < 20; i++ {
		ps, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Exclude: []api.SegmentID{"seg-a"}})
		if err != nil {
			t.Fatal(err)
		}
		if ps.Replicas[0].Segment != "seg-b" {
			t.Fatalf("placed on %s, which the request excludes", ps.Replicas[0].Segment)
		}
		if err := tc.call(api.MethodPutRevoke, &api.PutRevokeRequest{Key: "k", Incarnation: ps.Incarnation}, &api.Empty{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Exclude: []api.SegmentID{"seg-a", "seg-b"}}); err == nil {
		t.Fatal("a put excluding every segment was placed")
	}
}

// TestMountFromAnotherProcessFencesThePrevious: a second process of the
// same holder (a restart, or a copied directory) always gets a new mount
// epoch; only an identical repeat of one process keeps it.
func TestMountFromAnotherProcessFencesThePrevious(t *testing.T) {
	tc := startCluster(t, 1)
	h := tc.mountHolder(t, "seg-a", "")
	first := h.Epoch
	if err := h.mount(); err != nil {
		t.Fatal(err)
	}
	if h.Epoch != first {
		t.Fatalf("identical repeat mount moved the epoch %d -> %d", first, h.Epoch)
	}
	h.Process = "another-process"
	if err := h.mount(); err != nil {
		t.Fatal(err)
	}
	if h.Epoch <= first {
		t.Fatalf("mount from another process kept epoch %d (was %d): the previous process is not fenced", h.Epoch, first)
	}
}
