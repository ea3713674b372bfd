package master

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"sexton/internal/testutil"
	"sexton/raftio/raftiotest"
)

func lastSnapshotIndex(n *Node) uint64 {
	v, _ := strconv.ParseUint(n.Raft().Stats()["last_snapshot_index"], 10, 64)
	return v
}

// TestNodeRestartsFromALegacySnapshot: a data dir whose only snapshot was
// written by hashicorp's FileSnapshotStore (a master before this store),
// with the log behind it compacted away, restarts with that state; later
// snapshots reap it.
func TestNodeRestartsFromALegacySnapshot(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.SnapshotThreshold = 1 << 30
		c.SnapshotInterval = time.Hour
		c.TrailingLogs = 4
	})
	n := tc.waitLeader(t)
	h := tc.mountHolder(t, "seg-a", "")
	for i := range 20 {
		tc.put(t, fmt.Sprintf("legacy/key-%02d", i), 10, 1)
	}
	if err := n.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	first, err := n.guard.FirstIndex()
	if err != nil || first <= 2 {
		t.Fatalf("the log was not compacted behind the snapshot: first index %d, %v", first, err)
	}
	want := stateOf(n)
	dataDir := tc.cfgs[0].DataDir
	tc.stop(0)

	// Rewrite the snapshot in hashicorp's layout, and remove ours.
	s := openTestSnapStore(t, dataDir)
	metas, err := s.List()
	if err != nil || len(metas) != 1 {
		t.Fatalf("List = %v, %v", metas, err)
	}
	m, state, err := raftiotest.ReadSnap(s, metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	fss, err := raft.NewFileSnapshotStore(dataDir, 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	legacy := raftiotest.WriteSnap(t, fss, 1, m.Index, m.Term, m.Configuration, m.ConfigurationIndex, state)
	for _, suffix := range []string{".meta", ".state"} {
		if err := os.Remove(filepath.Join(dataDir, "snapshots", m.ID+suffix)); err != nil {
			t.Fatal(err)
		}
	}

	tc.start(0)
	n = tc.waitLeader(t)
	if got := stateOf(n); got.cluster != want.cluster || got.objects != want.objects {
		t.Fatalf("restarted from the legacy snapshot with %+v, want %+v", got, want)
	}
	if got := lastSnapshotIndex(n); got != m.Index {
		t.Fatalf("last snapshot index %d, want the legacy snapshot's %d", got, m.Index)
	}
	if _, err := tc.get("legacy/key-00"); err != nil {
		t.Fatalf("a key only the legacy snapshot holds: %v", err)
	}
	if err := h.mount(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		tc.put(t, fmt.Sprintf("legacy/more-%d", i), 10, 1)
		if err := n.Raft().Snapshot().Error(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "snapshots", legacy)); !os.IsNotExist(err) {
		t.Fatalf("the legacy snapshot was not reaped by three new ones: %v", err)
	}
}

// TestNodeRestartFallsBackPastACorruptSnapshot: the store no longer checks
// a state before handing it over; a flipped byte in the newest snapshot's
// state is refused by the fsm's restore (the stream's CRC-32C), which
// changes nothing, and raft's start falls back to the older snapshot and
// replays the log from there to the same state.
func TestNodeRestartFallsBackPastACorruptSnapshot(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.SnapshotThreshold = 1 << 30
		c.SnapshotInterval = time.Hour
		c.TrailingLogs = 100000 // the log behind both snapshots stays
	})
	n := tc.waitLeader(t)
	tc.mountHolder(t, "seg-a", "")
	for i := range 10 {
		tc.put(t, fmt.Sprintf("fallback/a-%02d", i), 10, 1)
	}
	if err := n.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	older := lastSnapshotIndex(n)
	for i := range 10 {
		tc.put(t, fmt.Sprintf("fallback/b-%02d", i), 10, 1)
	}
	if err := n.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	want := stateOf(n)
	dataDir := tc.cfgs[0].DataDir
	tc.stop(0)

	s := openTestSnapStore(t, dataDir)
	metas, err := s.List()
	if err != nil || len(metas) != 2 || metas[1].Index != older {
		t.Fatalf("List = %v, %v", metas, err)
	}
	statePath := filepath.Join(dataDir, "snapshots", metas[0].ID+".state")
	testutil.FlipMiddleBits(t, statePath, 0x01)

	tc.start(0)
	n = tc.waitLeader(t)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		got := stateOf(n)
		return got.cluster == want.cluster && got.objects == want.objects
	}, "the log replayed past the older snapshot")
	if got := lastSnapshotIndex(n); got != older {
		t.Fatalf("started from snapshot index %d, want the older %d", got, older)
	}
	if !strings.Contains(tc.logs.String(), "failed to restore snapshot") {
		t.Fatalf("no log of the refused snapshot:\n%s", tc.logs.String())
	}
}
