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
	if m := n.rfsm.meter.lastSnapBytes.Load(); m == 0 {
		t.Fatalf("snapshot size not recorded")
	}
	// Compaction follows the snapshot (raft publishes the snapshot's index
	// just before it compacts): the log's first index moves past the start.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		first, err := n.guard.FirstIndex()
		return err == nil && first > 1
	}, "the log compacted behind the snapshot")
}

// TestSnapshotMeterDue: the trigger is the larger of the floor and a
// quarter of the last snapshot, counted from the last snapshot.
func TestSnapshotMeterDue(t *testing.T) {
	var m snapshotMeter
	m.appliedBytes.Store(100)
	if !m.due(100, 1) || m.due(101, 1) {
		t.Fatalf("floor: due(100)=%v due(101)=%v at 100 bytes applied", m.due(100, 1), m.due(101, 1))
	}
	if m.due(80, 1.3) || !m.due(80, 1.25) {
		t.Fatalf("stagger: a floor of 80 scaled by 1.3 is due at 100 bytes, or by 1.25 is not")
	}
	m.appliedAtSnap.Store(100)
	m.lastSnapBytes.Store(2000) // a quarter of it is 500, above the floor of 100
	m.appliedBytes.Store(599)
	if m.due(100, 1) {
		t.Fatalf("due at 499 bytes since a 2000-byte snapshot")
	}
	m.appliedBytes.Store(600)
	if !m.due(100, 1) {
		t.Fatalf("not due at 500 bytes since a 2000-byte snapshot")
	}
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

// TestSnapshotStaggerSpreadsMembers: the three members of a cluster get
// three different trigger factors, the first 1.
func TestSnapshotStaggerSpreadsMembers(t *testing.T) {
	tc := startCluster(t, 3)
	tc.waitLeader(t)
	seen := map[float64]string{}
	for i := range 3 {
		n := tc.node(i)
		f := n.snapshotStagger()
		if other, dup := seen[f]; dup {
			t.Fatalf("%s and %s share the stagger factor %v", n.cfg.ID, other, f)
		}
		seen[f] = n.cfg.ID
	}
	if _, ok := seen[1]; !ok {
		t.Fatalf("no member has factor 1: %v", seen)
	}
}

// TestCountTriggerFollowsSnapshotSize: once a snapshot is taken, raft's
// entry-count trigger is one entry per snapshotBytesPerEntry of it (never
// below the configured threshold), so a large state is not snapshotted
// again after a few megabytes of small entries.
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
		want = countTrigger(1, n.rfsm.meter.lastSnapBytes.Load())
		return want > 1 && n.Raft().ReloadableConfig().SnapshotThreshold == want
	}, "the count trigger moved to the snapshot's size")
	if got := countTrigger(65536, 1<<30); got != 1<<30/snapshotBytesPerEntry {
		t.Fatalf("countTrigger(65536, 1 GiB) = %d", got)
	}
	if got := countTrigger(65536, 1<<20); got != 65536 {
		t.Fatalf("countTrigger(65536, 1 MiB) = %d, want the floor", got)
	}
}

// TestTrailingLogsFollowEntrySize: the log kept behind a snapshot is
// sized in bytes: with entries of a few hundred bytes and a 32 KiB budget,
// raft's TrailingLogs drops from the configured 1,000 to about a hundred.
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
		return got >= minTrailingLogs && got < 500
	}, "TrailingLogs sized to 32 KiB of entries")
	for _, c := range []struct {
		configured, budget uint64
		avg                float64
		want               uint64
	}{
		{10240, 64 << 20, 100, 10240},     // small entries: the configured count
		{10240, 64 << 20, 30 << 10, 2184}, // a bulk load's batches: 64 MiB of them
		{10240, 64 << 20, 4 << 20, 64},    // huge entries: the floor
		{10240, 64 << 20, 0, 10240},       // nothing measured yet
	} {
		if got := trailingCount(c.configured, c.budget, c.avg); got != c.want {
			t.Errorf("trailingCount(%d, %d, %.0f) = %d, want %d", c.configured, c.budget, c.avg, got, c.want)
		}
	}
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
	r.meter.appliedBytes.Store(12345)
	if err := r.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := r.meter.lastSnapBytes.Load(); got != uint64(buf.Len()) {
		t.Fatalf("last snapshot size after a restore: %d, the snapshot is %d bytes", got, buf.Len())
	}
	if got := r.meter.sinceSnapshot(); got != 0 {
		t.Fatalf("log applied since the restored snapshot: %d, want 0", got)
	}
}
