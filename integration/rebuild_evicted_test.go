package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
)

// TestRebuildAdoptsCopyEvictedElsewhere: a key put on two holders is
// evicted from one of them under disk pressure (the master drops that
// replica, the holder tombstones its copy marked evicted and GC reclaims
// it). Every master then loses its state; `operator rebuild` adopts the
// key from the other holder's live copy, and it reads back byte-identical.
// A key removed on both holders stays removed.
func TestRebuildAdoptsCopyEvictedElsewhere(t *testing.T) {
	c := startCluster(t, 3)
	c.holderExtra = func(name string) []string {
		if name != "small" {
			return nil
		}
		// Any stored value puts it above the high watermark: it evicts.
		return []string{"--capacity", "64KiB", "--gc-high-watermark", "0.2", "--gc-low-watermark", "0.1", "--gc-interval", "200ms"}
	}
	big := c.startHolder(t, "big", "a")
	small := c.startHolder(t, "small", "a")
	lib := c.lib()
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()

	removed := randomValue(t, 1000)
	putReplicas(t, c, "removed", "a", 2, removed)
	mustRemove(t, c, "removed")
	waitNoTasks(t, c.client(0), "removed", 20*time.Second)

	value := randomValue(t, 20000)
	inc := putReplicas(t, c, "evicted", "a", 2, value)
	// Wait for the small holder to evict its copy (and GC to reclaim it).
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := holderStatusWith(small.addr, c.cc())
		_, rerr := readFromHolder(small, c.token, "evicted", inc)
		if err == nil && st.GC.BucketsEvicted > 0 && rerr != nil && st.UsedBytes == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the small holder did not evict: %+v %v, read %v\n%s", st, err, rerr, tail(small.logText(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, err := readFromHolder(big, c.token, "evicted", inc); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("the big holder's copy: %d bytes, %v", len(got), err)
	}
	oldStatus, err := c.status(c.leader())
	if err != nil {
		t.Fatal(err)
	}

	c.loseEveryMaster(t)

	base := []string{"operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", big.addr + "," + small.addr}
	dry, stdout, _ := rebuildJSON(t, append(base, "--dry-run", "--json")...)
	bigSeg := c.holderSegment(t, big)
	if len(dry.Adopt) != 1 || dry.Adopt[0].Key != "evicted" || len(dry.Adopt[0].Segments) != 1 || dry.Adopt[0].Segments[0] != string(bigSeg) {
		t.Fatalf("dry run adopts %+v; want the evicted key from the big holder %s only\n%s", dry.Adopt, bigSeg, stdout)
	}
	rep, stdout, stderr := rebuildJSON(t, append(base, "--json")...)
	if rep.Adopted != 1 || rep.Failed != 0 {
		t.Fatalf("rebuild report %+v\n%s\n%s", rep, stdout, stderr)
	}
	if st, err := c.status(c.leader()); err != nil || st.ClusterID != oldStatus.ClusterID {
		t.Fatalf("after the rebuild: %+v %v", st, err)
	}
	c.waitHolderMounted(t, big)
	c.waitHolderMounted(t, small)
	got, err := getAfterMount(ctx, lib, "evicted")
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("get evicted after the rebuild: %d bytes, %v; want the acknowledged %d bytes", len(got), err, len(value))
	}
	if _, _, err := lib.Get(ctx, "removed"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get removed after the rebuild: %v, want OBJECT_NOT_FOUND", err)
	}
}

// getAfterMount reads key, waiting out UNAVAILABLE while the master has
// not yet seen a just-mounted holder alive.
func getAfterMount(ctx context.Context, lib *client.Client, key string) ([]byte, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _, err := lib.Get(ctx, key)
		if api.CodeOf(err) != api.CodeUnavailable || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holderSegment returns the holder's segment id from its
// own status (mounted or not: before a rebuild it cannot mount).
func (c *cluster) holderSegment(t *testing.T, h *holderNode) api.SegmentID {
	t.Helper()
	st, err := holderStatusWith(h.addr, c.cc())
	if err != nil {
		t.Fatalf("holder %s status: %v", h.name, err)
	}
	return st.Segment
}
