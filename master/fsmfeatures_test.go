package master

import (
	"bytes"
	"testing"

	"sexton/api"
	"sexton/fsm"
	"sexton/snapshot"
)

// requireSnapshotSettings skips the rest of a test while the fsm still
// writes snapshots that carry no settings (before format 1.2.0).
func requireSnapshotSettings(t *testing.T) {
	t.Helper()
	var buf bytes.Buffer
	v := fsm.New(fsm.Config{}).Snapshot()
	_, err := v.WriteTo(&buf)
	v.Release()
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := snapshot.Inspect(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format == snapshot.Format110 {
		t.Skip("the fsm writes 1.1.0 snapshots, which carry no settings")
	}
}

// requireFSMSessions skips the rest of a test while the fsm does not yet
// answer a repeated request from its session table.
func requireFSMSessions(t *testing.T) {
	t.Helper()
	f := fsm.New(fsm.Config{})
	index := uint64(0)
	apply := func(cmd fsm.Command) any {
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
	apply(&fsm.EpochBegin{Term: 1, LeaderID: "m1", ClusterID: 1, Now: 1})
	apply(&fsm.MountLocalDisk{ClientID: "h", Segment: "s", Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Now: 1})
	put := &fsm.PutStart{Key: "k", Size: 1, Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "s"}},
		Session: api.Session{ClientID: "c", Seq: 1}, Now: 2}
	apply(put)
	if r := apply(put).(*fsm.PutStartResult); !r.Duplicate {
		t.Skip("the fsm does not deduplicate sessioned requests yet")
	}
}
