package master

import (
	"os"
	"testing"

	"sexton/api"
	"sexton/fsm"
	"sexton/snapshot"
)

// restoreFixture is a 1.1.0 snapshot, from before settings were
// replicated: one mounted segment, 5 objects of which 3 were removed, so 2
// objects and 3 pending tasks. It restores under the cluster's own
// settings, so a cluster whose registry capacity is below 3 must refuse
// it. Regenerate (only possible with a build that writes 1.1.0) with
// SEXTON_REGEN_FIXTURES=1 go test -run TestRestoreFixture ./master/
const restoreFixture = "testdata/v110-3tasks.snap"

const restoreFixtureCluster = 0x5e7700000000abcd

func TestRestoreFixture(t *testing.T) {
	if os.Getenv("SEXTON_REGEN_FIXTURES") != "" {
		writeRestoreFixture(t)
	}
	f, err := os.Open(restoreFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, c, err := snapshot.Inspect(f)
	if err != nil || h.Format != snapshot.Format110 || h.ClusterID != restoreFixtureCluster || c.Objects != 2 || c.Tasks != 3 {
		t.Fatalf("fixture %s: %+v %+v %v", restoreFixture, h, c, err)
	}
}

func writeRestoreFixture(t *testing.T) {
	f := fsm.New(fsm.Config{})
	index := uint64(0)
	apply := func(cmd fsm.Command) any {
		t.Helper()
		data, err := fsm.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		index++
		res, err := f.Apply(index, 1, data)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	now := int64(1_700_000_000_000_000_000)
	apply(&fsm.EpochBegin{V: fsm.EpochBeginV1, Term: 1, LeaderID: "m1", LeaderAddr: "127.0.0.1:7101", ClusterID: restoreFixtureCluster, Now: now})
	apply(&fsm.MountLocalDisk{V: fsm.MountLocalDiskV1, ClientID: "holder-a", Segment: "seg-a", Pool: "", Capacity: 1 << 30,
		Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: "127.0.0.1:7301", Now: now})
	keys := []string{"old-1", "old-2", "old-3", "old-4", "old-5"}
	for _, k := range keys {
		r := apply(&fsm.PutStart{V: fsm.PutStartV1, PutStartItem: fsm.PutStartItem{Key: k, Size: 1, Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "seg-a"}}},
			Now: now}).(*fsm.PutStartResult)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		apply(&fsm.PutEnd{V: fsm.PutEndV1, Key: k, Incarnation: r.Incarnation, Now: now})
	}
	rr := apply(&fsm.Remove{V: fsm.RemoveV1, Keys: keys[:3], Now: now}).(*fsm.RemoveResult)
	for _, r := range rr.Results {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	out, err := os.Create(restoreFixture)
	if err != nil {
		t.Fatal(err)
	}
	v := f.Snapshot()
	_, err = v.WriteTo(out)
	v.Release()
	if err == nil {
		err = out.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}
