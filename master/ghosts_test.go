package master

import (
	"context"
	"strings"
	"testing"

	"sexton/api"
	"sexton/internal/testutil"
)

// saveSnapshot fetches the leader's snapshot the way `operator snapshot
// save` does, in chunks.
func (tc *testCluster) saveSnapshot(t *testing.T) []byte {
	t.Helper()
	var data []byte
	req := &api.SnapshotChunkRequest{}
	for {
		var c api.SnapshotChunk
		if err := tc.call(api.MethodSnapshotSave, req, &c); err != nil {
			t.Fatalf("snapshot save: %v", err)
		}
		data = append(data, c.Data...)
		if c.EOF {
			return data
		}
		req = &api.SnapshotChunkRequest{ID: c.ID, Offset: c.Offset + int64(len(c.Data))}
	}
}

// listReplicas asks, as the holder's ghost check does, for every replica
// the table places on the segment.
func (h *fakeHolder) listReplicas(t *testing.T) []api.ObjectRef {
	t.Helper()
	var out []api.ObjectRef
	req := &api.ListReplicasRequest{Segment: h.Seg, MountEpoch: h.Epoch}
	for {
		resp, err := h.tc.link().ListReplicas(context.Background(), req)
		if err != nil {
			t.Fatalf("list replicas of %s: %v", h.Seg, err)
		}
		out = append(out, resp.Refs...)
		if !resp.More {
			return out
		}
		req.After = resp.Next
	}
}

// reportTombstoned tells the leader the holder holds refs tombstoned.
func (h *fakeHolder) reportTombstoned(refs ...api.ObjectRef) (*api.DropTombstonedResponse, error) {
	resp, err := h.tc.link().DropTombstoned(context.Background(), &api.DropTombstonedRequest{Segment: h.Seg, MountEpoch: h.Epoch, Refs: refs})
	return &resp, err
}

func segmentsOf(o *api.ObjectInfo) []string {
	var out []string
	for _, r := range o.Replicas {
		out = append(out, string(r.Segment))
	}
	return out
}

// TestRestoreOfAnOlderFileNeedsAllowRollback: a file whose index is below
// the leader's applied index (saved before a remove) is refused without
// AllowRollback, naming the flag and what would be undone, and nothing
// changes; a file saved at the applied index restores without it; with
// the flag the older file is installed and the removed key is listed again
// (until the holders' ghost check, which this fake holder does not run).
func TestRestoreOfAnOlderFileNeedsAllowRollback(t *testing.T) {
	tc := startCluster(t, 1)
	tc.mountHolder(t, "seg-a", "")
	k := tc.put(t, "k", 1, 1)
	old := tc.saveSnapshot(t)
	if err := tc.remove("k"); err != nil {
		t.Fatal(err)
	}
	leader := tc.waitLeader(t)
	before := stateOf(leader)
	_, err := tc.restoreUpload(t, "old", old, false)
	if api.CodeOf(err) != api.CodeInvalidParams || !strings.Contains(err.Error(), "--allow-rollback") || !strings.Contains(err.Error(), "undone") {
		t.Fatalf("restore of an older file without allow-rollback: %v, want INVALID_PARAMS naming --allow-rollback and what is undone", err)
	}
	if got := stateOf(leader); got != before {
		t.Fatalf("a refused restore changed the state: %+v, was %+v", got, before)
	}
	if _, err := tc.get("k"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get of the removed key after a refused restore: %v", err)
	}

	current := tc.saveSnapshot(t)
	if _, err := tc.restoreUpload(t, "current", current, false); err != nil {
		t.Fatalf("restore of a file at the applied index: %v", err)
	}
	if _, err := tc.restoreUpload(t, "old-allowed", old, true); err != nil {
		t.Fatalf("restore of an older file with allow-rollback: %v", err)
	}
	testutil.WaitFor(t, harnessTimeout, func() bool {
		o, err := tc.get("k")
		return err == nil && o.Incarnation == k.Incarnation
	}, "the restored table lists k again")
}

// TestGhostCheckDropsOnlyTheReportedReplicas: of an object on two
// segments, the replica one holder reports tombstoned is dropped and the
// other kept; when the second holder reports its copy too the object
// leaves the table and a put-if-absent of the key works. A report of an
// incarnation a newer put replaced changes nothing, and a report at a
// stale mount epoch is refused.
func TestGhostCheckDropsOnlyTheReportedReplicas(t *testing.T) {
	tc := startCluster(t, 1)
	a := tc.mountHolder(t, "seg-a", "")
	b := tc.mountHolder(t, "seg-b", "")
	k := tc.put(t, "k", 1, 2)
	n := tc.put(t, "n", 1, 2)
	ref := func(key string, ps *api.PutStartResponse) api.ObjectRef {
		return api.ObjectRef{Key: key, Incarnation: ps.Incarnation}
	}
	listed := a.listReplicas(t)
	if len(listed) != 2 || listed[0] != ref("k", k) || listed[1] != ref("n", n) {
		t.Fatalf("replicas listed on seg-a: %+v, want k and n", listed)
	}

	r, err := a.reportTombstoned(ref("k", k))
	if err != nil || len(r.Dropped) != 1 || r.Objects != 0 {
		t.Fatalf("seg-a reports k tombstoned: %+v %v, want one replica dropped and the object kept", r, err)
	}
	o, err := tc.get("k")
	if err != nil || o.Incarnation != k.Incarnation || strings.Join(segmentsOf(o), ",") != "seg-b" {
		t.Fatalf("k after seg-a's report: %+v %v, want %s on seg-b only", o, err, k.Incarnation)
	}

	n2 := tc.put(t, "n", 1, 2)
	if r, err := a.reportTombstoned(ref("n", n)); err != nil || len(r.Dropped) != 0 {
		t.Fatalf("a report of n's replaced incarnation: %+v %v, want nothing dropped", r, err)
	}
	if o, err := tc.get("n"); err != nil || o.Incarnation != n2.Incarnation || len(o.Replicas) != 2 {
		t.Fatalf("n after a report of its replaced incarnation: %+v %v, want %s on two segments", o, err, n2.Incarnation)
	}

	stale := &fakeHolder{tc: tc, Seg: b.Seg, Epoch: b.Epoch + 7}
	if _, err := stale.reportTombstoned(ref("k", k)); api.CodeOf(err) != api.CodeStaleMountEpoch {
		t.Fatalf("a report at a stale mount epoch: %v, want STALE_MOUNT_EPOCH", err)
	}
	r, err = b.reportTombstoned(ref("k", k))
	if err != nil || len(r.Dropped) != 1 || r.Objects != 1 {
		t.Fatalf("seg-b reports k tombstoned: %+v %v, want its replica dropped and the object gone", r, err)
	}
	if _, err := tc.get("k"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get k after both holders reported it: %v, want OBJECT_NOT_FOUND", err)
	}
	if _, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 2, IfAbsent: true}); err != nil {
		t.Fatalf("put-if-absent of k after the drop: %v", err)
	}
	if tasks, _ := tc.waitLeader(t).fsm.ListTasks("", 0); len(tasks) != 2 {
		// n's replaced incarnation has a task per replica; the drops add none.
		t.Fatalf("%d tasks, want n's 2", len(tasks))
	}
}
