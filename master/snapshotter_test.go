package master

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sexton/fsm"
	"sexton/internal/testutil"
	"sexton/master/policy/snaptrigger"
)

// TestSnapshotByLogBytes: with raft's entry-count trigger out of reach, a
// node still snapshots once the log it applied since its last snapshot
// reaches SnapshotLogBytes, and the log behind the snapshot is compacted.
func TestSnapshotByLogBytes(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.SnapshotThreshold = 1 << 30 // raft's own trigger never fires here
		c.SnapshotInterval = time.Hour
		c.TrailingLogs = 16
		c.SnapshotLogBytes = 32 << 10
	})
	n := tc.waitLeader(t)
	tc.mountHolder(t, "seg-a", "")
	lastSnap := func() uint64 {
		v, _ := strconv.ParseUint(n.Raft().Stats()["last_snapshot_index"], 10, 64)
		return v
	}
	if s := lastSnap(); s != 0 {
		t.Fatalf("a snapshot exists before any load: index %d", s)
	}
	// Each put is two entries of a few hundred bytes: 200 puts are well
	// past 32 KiB.
	for i := range 200 {
		tc.put(t, fmt.Sprintf("snap/key-%04d-%s", i, "padding-to-make-entries-bigger"), 10, 1)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return lastSnap() > 0 }, "a snapshot taken by the byte trigger")
	if m := n.rfsm.meter.LastSnapBytes.Load(); m == 0 {
		t.Fatalf("snapshot size not recorded")
	}
	// Compaction follows the snapshot (raft publishes the snapshot's index
	// just before it compacts): the log's first index moves past the start.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		first, err := n.guard.FirstIndex()
		return err == nil && first > 1
	}, "the log compacted behind the snapshot")
}

// TestSnapshotNowEndpoint: POST /debug/snapshot (with EnableDebug) takes
// a snapshot; a GET changes nothing; without EnableDebug it is not served.
func TestSnapshotNowEndpoint(t *testing.T) {
	for _, debug := range []bool{false, true} {
		tc := startCluster(t, 1, func(c *Config) { c.HTTPAddr = freeAddr(t); c.EnableDebug = debug })
		n := tc.waitLeader(t)
		tc.mountHolder(t, "seg-a", "")
		url := "http://" + n.HTTPAddr() + "/debug/snapshot"
		if code, _ := testutil.HTTPGet(t, http.DefaultClient, url); code != map[bool]int{false: 404, true: 405}[debug] {
			t.Fatalf("EnableDebug=%v: GET answered %d", debug, code)
		}
		resp, err := http.Post(url, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		snapped := n.Raft().Stats()["last_snapshot_index"] != "0"
		if want := map[bool]int{false: 404, true: 200}[debug]; resp.StatusCode != want || snapped != debug {
			t.Fatalf("EnableDebug=%v: POST answered %d (want %d), snapshot taken %v", debug, resp.StatusCode, want, snapped)
		}
	}
}

// TestCountTriggerFollowsSnapshotSize: once a snapshot is taken, raft's
// entry-count trigger is one entry per snapshotBytesPerEntry of it (never
// below the configured threshold), so a large state is not snapshotted
// again after a few megabytes of small entries. snaptrigger.CountTrigger's
// figures are in policy/snaptrigger/testdata/snapshot_triggers.txt; this
// checks that a running node applies them.
func TestCountTriggerFollowsSnapshotSize(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.SnapshotThreshold = 1 // the floor; raft checks it only hourly here
		c.SnapshotInterval = time.Hour
		c.TrailingLogs = 16
		c.SnapshotLogBytes = 32 << 10
	})
	n := tc.waitLeader(t)
	tc.mountHolder(t, "seg-a", "")
	for i := range 200 {
		tc.put(t, fmt.Sprintf("count/key-%04d-%s", i, "padding-to-make-entries-bigger"), 10, 1)
	}
	var want uint64
	testutil.WaitFor(t, 10*time.Second, func() bool {
		want = snaptrigger.CountTrigger(1, n.rfsm.meter.LastSnapBytes.Load())
		return want > 1 && n.Raft().ReloadableConfig().SnapshotThreshold == want
	}, "the count trigger moved to the snapshot's size")
}

// TestTrailingLogsFollowEntrySize: the log kept behind a snapshot is
// sized in bytes: with entries of a few hundred bytes and a 32 KiB budget,
// raft's TrailingLogs drops from the configured 1,000 to about a hundred.
// snaptrigger.TrailingCount's figures are in
// policy/snaptrigger/testdata/snapshot_triggers.txt; this checks that a
// running node applies them.
func TestTrailingLogsFollowEntrySize(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.TrailingLogs = 1000
		c.TrailingLogBytes = 32 << 10
	})
	n := tc.waitLeader(t)
	tc.mountHolder(t, "seg-a", "")
	for i := range 200 {
		tc.put(t, fmt.Sprintf("trailing/key-%04d-%s", i, strings.Repeat("p", 100)), 10, 1)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		got := n.Raft().ReloadableConfig().TrailingLogs
		return got >= snaptrigger.MinTrailingLogs && got < 500
	}, "TrailingLogs sized to 32 KiB of entries")
}

// TestRestoreSetsSnapshotSize: a restored snapshot counts as the node's
// last one for the byte and count triggers, so a restarted master does
// not fall back to the floors and snapshot its whole state again after
// 64 MiB of log.
func TestRestoreSetsSnapshotSize(t *testing.T) {
	src := fsm.New(fsm.Config{})
	v := src.Snapshot()
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	v.Release()
	r := &raftFSM{f: fsm.New(fsm.Config{}), wake: newWakeups()}
	r.meter.AppliedBytes.Store(12345)
	if err := r.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := r.meter.LastSnapBytes.Load(); got != uint64(buf.Len()) {
		t.Fatalf("last snapshot size after a restore: %d, the snapshot is %d bytes", got, buf.Len())
	}
	if got := r.meter.SinceSnapshot(); got != 0 {
		t.Fatalf("log applied since the restored snapshot: %d, want 0", got)
	}
}
