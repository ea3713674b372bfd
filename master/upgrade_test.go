package master

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
	"sexton/internal/testutil"
	"sexton/raftio"
	"sexton/raftio/raftiotest"
	"sexton/snapshot"
)

// The data dir of a cluster that ran a build from before replicated
// settings with --registry-capacity 60000: hashicorp's file snapshot
// store holding a 1.1.0 snapshot of 55,000 pending tasks (more than the
// default capacity) and 6,000 live objects, and after it two v1 Removes
// in the log. The old build acknowledged all 4,000 keys of the first; of
// the second's 2,000 it acknowledged the first 1,000 and refused the rest
// for a full registry (60,000 tasks).
const (
	oldCapacity     = 60_000
	oldGoneTasks    = 55_000
	oldLiveObjects  = 6_000
	oldCluster      = 0x01d0000000000abc
	oldSnapIndex    = 1_000
	oldTerm         = 2
	oldAcknowledged = 5_000 // live keys the old log removed
	// upgradeRaftTimeout replaces the harness's 150 ms heartbeat and
	// election timeouts: each node restores 55,000 tasks as it starts, a
	// few seconds under the race detector on a busy machine, and leaders
	// elected meanwhile would keep stepping down.
	upgradeRaftTimeout = time.Second
)

func oldKey(prefix string, i int) string { return fmt.Sprintf("%s/%06d", prefix, i) }

// oldBuildSnapshot is the old build's 1.1.0 snapshot at index, with
// tasks pending tasks (oldSnapIndex, oldGoneTasks: the one the log follows).
func oldBuildSnapshot(t *testing.T, index uint64, tasks int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := snapshot.NewWriter(&buf, snapshot.Header{Format: snapshot.Format110, ClusterID: oldCluster, LastIndex: index, LastTerm: oldTerm, Created: 1_700_000_000_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	replicas := []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "seg-a", Pool: "p"}}
	must(w.BeginSection(snapshot.SectionMetadata))
	for i := range oldLiveObjects {
		must(w.WriteRecord(&snapshot.Object{Key: oldKey("live", i), Tenant: "default", Size: 1, State: snapshot.ObjectComplete,
			Incarnation: api.ObjectIncarnation{High: oldCluster, Low: 20}, Created: 1_700_000_000_000_000_000, Replicas: replicas}))
	}
	must(w.EndSection())
	must(w.BeginSection(snapshot.SectionSegments))
	must(w.WriteRecord(&snapshot.Segment{ID: "seg-a", ClientID: "holder-a", Pool: "p", Capacity: 1 << 40,
		Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: "127.0.0.1:7301", MountEpoch: 1, Mounted: true}))
	must(w.EndSection())
	must(w.BeginSection(snapshot.SectionTasks))
	for i := range tasks {
		must(w.WriteRecord(&snapshot.Task{ID: uint64(i + 1), Segment: "seg-a", Key: oldKey("gone", i), Tenant: "default",
			Incarnation: api.ObjectIncarnation{High: oldCluster, Low: 10}, Created: 1_700_000_000_000_000_000}))
	}
	must(w.EndSection())
	must(w.BeginSection(snapshot.SectionState))
	must(w.WriteRecord(&snapshot.State{MasterEpoch: 1, NextTaskID: uint64(tasks) + 1, LeaderID: "m1", LeaderAddr: "127.0.0.1:7101", LastNow: 1_700_000_000_000_000_000}))
	must(w.EndSection())
	must(w.Close())
	return buf.Bytes()
}

// oldBuildLog is the old build's log after the snapshot: v1 Removes.
func oldBuildLog(t *testing.T) []*raft.Log {
	t.Helper()
	var keys []string
	for i := range oldLiveObjects {
		keys = append(keys, oldKey("live", i))
	}
	var out []*raft.Log
	for i, ks := range [][]string{keys[:4_000], keys[4_000:6_000]} {
		data, err := fsm.Encode(&fsm.Remove{V: fsm.RemoveV1, Keys: ks, Now: 1_700_000_000_000_000_000 + int64(i+1)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &raft.Log{Index: oldSnapIndex + uint64(i) + 1, Term: oldTerm, Type: raft.LogCommand, Data: data})
	}
	return out
}

// writeOldBuildSnapshot stores snap, taken at index, in cfg's data dir the
// way the old build did: hashicorp's file snapshot store.
func writeOldBuildSnapshot(t *testing.T, cfg *Config, index uint64, snap []byte) {
	t.Helper()
	var conf raft.Configuration
	for _, p := range cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	raftiotest.WriteSnap(t, snaps, raft.SnapshotVersionMax, index, oldTerm, conf, 1, snap)
}

// writeOldBuildDataDir fills cfg's data dir as the old build left it.
func writeOldBuildDataDir(t *testing.T, cfg *Config, snap []byte, log []*raft.Log) {
	t.Helper()
	writeOldBuildSnapshot(t, cfg, oldSnapIndex, snap)
	store, err := raftio.OpenLogStore(cfg.DataDir, raftio.LogStoreOptions{Kind: raftio.LogStoreBoltDB}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Logs.StoreLogs(log); err != nil {
		t.Fatal(err)
	}
	if err := store.Stable.SetUint64([]byte("CurrentTerm"), oldTerm); err != nil {
		t.Fatal(err)
	}
}

// upgradedFrom fills every node's data dir as the old build left it and
// gives node i legacy[i] as --legacy-registry-capacity.
func upgradedFrom(t *testing.T, legacy ...int) func(*Config) {
	snap, log := oldBuildSnapshot(t, oldSnapIndex, oldGoneTasks), oldBuildLog(t)
	return func(c *Config) {
		var i int
		fmt.Sscanf(c.ID, "m%d", &i)
		writeOldBuildDataDir(t, c, snap, log)
		c.LegacyRegistryCapacity = legacy[i-1]
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = upgradeRaftTimeout, upgradeRaftTimeout, upgradeRaftTimeout/2
	}
}

// holdsOldBuildState reports whether n holds the state the old build
// acknowledged: its tasks, the live keys it removed gone, the ones it
// refused to remove still there.
func holdsOldBuildState(n *Node) error {
	if st := n.fsm.Stats(); st.PendingTasks != oldCapacity || st.Objects != oldLiveObjects-oldAcknowledged || st.ClusterID != oldCluster {
		return fmt.Errorf("%s: %d tasks, %d objects, cluster %x; the old build had %d tasks, %d objects, cluster %x",
			n.cfg.ID, st.PendingTasks, st.Objects, st.ClusterID, oldCapacity, oldLiveObjects-oldAcknowledged, uint64(oldCluster))
	}
	for _, i := range []int{0, 3_999, 4_000, oldAcknowledged - 1} {
		if n.fsm.Exists(oldKey("live", i)) {
			return fmt.Errorf("%s: %s exists, but the old build acknowledged its remove", n.cfg.ID, oldKey("live", i))
		}
	}
	for _, i := range []int{oldAcknowledged, oldLiveObjects - 1} {
		if !n.fsm.Exists(oldKey("live", i)) {
			return fmt.Errorf("%s: %s is gone, but the old build refused its remove", n.cfg.ID, oldKey("live", i))
		}
	}
	return nil
}

// TestUpgradeFromBeforeReplicatedSettings: three masters start this build
// on the data dirs of a cluster that ran the old build with
// --registry-capacity 60000, each with --legacy-registry-capacity 60000.
// They restore the 1.1.0 snapshot of 55,000 tasks, replay the old log as
// the old build applied it (the removes it acknowledged are applied, the
// ones it refused are not) and hold its state; the leader's first
// Settings entry makes 60,000 the replicated capacity, and the state
// survives a restart.
func TestUpgradeFromBeforeReplicatedSettings(t *testing.T) {
	tc := startCluster(t, 3, upgradedFrom(t, oldCapacity, oldCapacity, oldCapacity))
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if s, ok := n.fsm.Settings(); !ok || s.RegistryCapacity != oldCapacity || holdsOldBuildState(n) != nil {
				return false
			}
		}
		return true
	}, "every node holds the old build's state with replicated settings")
	// A follower restarts from its own data dir.
	f := (tc.leaderIndex(t) + 1) % len(tc.nodes)
	tc.stop(f)
	tc.start(f)
	tc.waitAllApplied(t, "the restarted node caught up")
	for _, n := range tc.nodes {
		if err := holdsOldBuildState(n); err != nil {
			t.Fatal(err)
		}
		if s, ok := n.fsm.Settings(); !ok || s.RegistryCapacity != oldCapacity {
			t.Fatalf("%s settings %+v (replicated %v), want the old build's capacity %d replicated", n.cfg.ID, s, ok, oldCapacity)
		}
	}
	if strings.Contains(tc.logs.String(), "under another --legacy-registry-capacity") {
		t.Fatal("a node warned about a legacy capacity every node was given alike")
	}
}

// TestUpgradeWithoutTheOldCapacityRefusesToStart: without
// --legacy-registry-capacity the 1.1.0 snapshot holds more tasks than the
// default capacity. The master refuses to start, naming the flag and the
// least value, rather than fall back to an older snapshot that fits (it
// would restore and replay under the same wrong capacity, with the log
// before the newer snapshot compacted away), and leaves its data dir as it
// was: started again with the flag it restores and replays the old
// build's state.
func TestUpgradeWithoutTheOldCapacityRefusesToStart(t *testing.T) {
	logs := masterLogs()
	raftAddr := freeAddr(t)
	cfg := Config{
		ID: "m1", DataDir: filepath.Join(t.TempDir(), "m1"), RaftAddr: raftAddr, RPCAddr: freeAddr(t),
		Peers: []Peer{{ID: "m1", RaftAddr: raftAddr}}, Bootstrap: true,
		HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
		LeaderLeaseTimeout: 75 * time.Millisecond, CommitTimeout: 2 * time.Millisecond, ApplyTimeout: 5 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "master-m1", Level: hclog.Info, Output: logs}),
		Halt:   func(err error) { panic(fmt.Sprintf("master halted: %v\n%s", err, logs.String())) },
	}
	writeOldBuildSnapshot(t, &cfg, oldSnapIndex/2, oldBuildSnapshot(t, oldSnapIndex/2, 3))
	upgradedFrom(t, 0)(&cfg)
	for _, legacy := range []int{0, oldGoneTasks - 1} {
		cfg.LegacyRegistryCapacity = legacy
		n, err := New(cfg)
		if err == nil {
			n.Shutdown()
			t.Fatalf("started on a 1.1.0 snapshot of %d tasks with --legacy-registry-capacity %d", oldGoneTasks, legacy)
		}
		t.Logf("--legacy-registry-capacity %d: %v", legacy, err)
		for _, want := range []string{"--legacy-registry-capacity", fmt.Sprintf("at least %d", oldGoneTasks)} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("the refusal does not name %q: %v", want, err)
			}
		}
	}
	cfg.LegacyRegistryCapacity = oldCapacity
	tc := &testCluster{t: t, cfgs: []Config{cfg}, nodes: make([]*Node, 1), logs: logs}
	t.Cleanup(func() { tc.stop(0) })
	tc.start(0)
	n := tc.waitLeader(t)
	testutil.WaitFor(t, harnessTimeout, func() bool {
		s, ok := n.fsm.Settings()
		return ok && s.RegistryCapacity == oldCapacity && holdsOldBuildState(n) == nil
	}, "the old build's state with replicated settings")
}

// TestUpgradeWithDifferentLegacyCapacitiesIsLogged: the masters were given
// different --legacy-registry-capacity values (60000, 60000, 59500), so
// they replay the old log differently. The leader's first Settings entry
// carries its own value; every node ends with the same replicated
// settings, and a node whose value differs from the leader's says so,
// naming both.
func TestUpgradeWithDifferentLegacyCapacitiesIsLogged(t *testing.T) {
	tc := startCluster(t, 3, upgradedFrom(t, oldCapacity, oldCapacity, oldCapacity-500))
	leader := tc.waitLeader(t)
	want := leader.cfg.LegacyRegistryCapacity
	tc.waitRegistryCapacity(t, want, "every node applied the first Settings entry")
	for _, n := range tc.nodes {
		if n.cfg.LegacyRegistryCapacity == want {
			continue
		}
		msg := fmt.Sprintf("legacy_registry_capacity=%d leader_legacy_registry_capacity=%d", n.cfg.LegacyRegistryCapacity, want)
		testutil.WaitFor(t, 3*time.Second, func() bool {
			return strings.Contains(tc.logs.String(), msg)
		}, n.cfg.ID+" says its legacy capacity differs from the leader's")
	}
}
