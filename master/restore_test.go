package master

import (
	"os"
	"strings"
	"testing"

	"sexton/api"
	"sexton/internal/testutil"
)

// restoreUpload sends a snapshot file to the leader the way `operator
// restore` does, in chunks (the last one carrying allowRollback), and
// returns the final answer.
func (tc *testCluster) restoreUpload(t *testing.T, id string, data []byte, allowRollback bool) (*api.SnapshotRestoreResponse, error) {
	t.Helper()
	var resp api.SnapshotRestoreResponse
	for off := 0; ; off += api.SnapshotChunkSize {
		end := min(off+api.SnapshotChunkSize, len(data))
		chunk := &api.SnapshotChunk{ID: id, Offset: int64(off), Data: data[off:end], Total: int64(len(data)), EOF: end == len(data)}
		chunk.AllowRollback = chunk.EOF && allowRollback
		if err := tc.call(api.MethodSnapshotRestore, chunk, &resp); err != nil {
			return nil, err
		}
		if chunk.EOF {
			return &resp, nil
		}
	}
}

// nodeState is what a test compares of one node's fsm.
type nodeState struct {
	cluster                uint64
	objects, tasks, epochs int
	settings               api.Settings
}

func stateOf(n *Node) nodeState {
	st := n.fsm.Stats()
	set, _ := n.fsm.Settings()
	return nodeState{cluster: st.ClusterID, objects: st.Objects, tasks: st.PendingTasks, epochs: int(st.MasterEpoch), settings: set}
}

// TestRestoreOfAFileTheFSMRefusesChangesNothing: an operator restores a
// 1.1.0 file with more tasks than the cluster's replicated registry
// capacity. The restore is refused with the reason, every node keeps
// running with its state unchanged and can restart; after the capacity is
// raised the same file restores on all three nodes, which restart from it.
func TestRestoreOfAFileTheFSMRefusesChangesNothing(t *testing.T) {
	data, err := os.ReadFile(restoreFixture)
	if err != nil {
		t.Fatal(err)
	}
	tc := startCluster(t, 3, func(c *Config) { c.Settings.RegistryCapacity = 2 })
	tc.mountHolder(t, "seg-a", "")
	mine := tc.put(t, "mine", 1, 1)
	tc.waitAllApplied(t, "every node applied the put")
	before := make([]nodeState, len(tc.nodes))
	for i, n := range tc.nodes {
		before[i] = stateOf(n)
	}

	// The snapshot package's 1.1.0 golden file reads as a stream but
	// names a task on a retired segment, which the fsm refuses.
	inconsistent, err := os.ReadFile("../snapshot/testdata/v110.snap")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		why  string
	}{
		{"over-capacity", data, "operator settings set --registry-capacity"}, // the decision, not only the problem
		{"inconsistent", inconsistent, "retired segment"},
	} {
		_, err = tc.restoreUpload(t, c.name, c.data, true)
		if code := api.CodeOf(err); code != api.CodeCorrupt && code != api.CodeInvalidParams {
			t.Fatalf("restore of the %s file: %v, want CORRUPT or INVALID_PARAMS", c.name, err)
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Fatalf("the refusal of the %s file does not name the problem (%s): %v", c.name, c.why, err)
		}
	}
	for i, n := range tc.nodes {
		select {
		case <-n.Done():
			t.Fatalf("%s stopped after a refused restore", n.cfg.ID)
		default:
		}
		if got := stateOf(n); got != before[i] {
			t.Fatalf("%s changed by a refused restore: %+v, was %+v", n.cfg.ID, got, before[i])
		}
		if v, err := n.fsm.Get("mine"); err != nil || v.Incarnation != mine.Incarnation {
			t.Fatalf("%s lost %q to a refused restore: %v", n.cfg.ID, "mine", err)
		}
	}
	// Every node still restarts from its own state.
	for i := range tc.nodes {
		tc.stop(i)
		tc.start(i)
		tc.waitLeader(t)
	}
	tc.put(t, "after", 1, 1)

	var set api.SettingsResponse
	if err := tc.call(api.MethodSettingsSet, &api.SettingsSetRequest{Settings: api.Settings{RegistryCapacity: 10}}, &set); err != nil {
		t.Fatal(err)
	}
	resp, err := tc.restoreUpload(t, "accepted", data, true)
	if err != nil {
		t.Fatalf("restore under a registry capacity of 10: %v", err)
	}
	if resp.Objects != 2 || resp.Tasks != 3 || resp.Format != "1.1.0" {
		t.Fatalf("restore answered %+v", resp)
	}
	restored := func(n *Node) bool {
		s := stateOf(n)
		_, err := n.fsm.Get("mine")
		return s.cluster == restoreFixtureCluster && s.objects == 2 && s.tasks == 3 && api.CodeOf(err) == api.CodeObjectNotFound
	}
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if !restored(n) {
				return false
			}
		}
		return true
	}, "every node holds the restored state")
	// And every node restarts from the restored snapshot.
	for i := range tc.nodes {
		tc.stop(i)
		tc.start(i)
		tc.waitLeader(t)
		if n := tc.nodes[i]; !restored(n) {
			testutil.WaitFor(t, harnessTimeout, func() bool { return restored(n) }, n.cfg.ID+" restarted into the restored state")
		}
	}
	for _, n := range tc.nodes {
		if s, ok := n.fsm.Settings(); !ok || s.RegistryCapacity != 10 {
			t.Fatalf("%s restored with settings %+v (set %v), want the registry capacity it was checked under, 10", n.cfg.ID, s, ok)
		}
	}
}
