package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"sexton/api"
	"sexton/transport"
)

// TestRebuildScale measures `operator rebuild` of SEXTON_REBUILD_OBJECTS
// objects (run it with SEXTON_REBUILD_OBJECTS=1000000; skipped without)
// over three holders against a real three-master cluster. The holders are
// simulated: in-process servers answering HolderListRecords with
// metadata-only records (no values), every key on two of the three
// holders and one key in a hundred with an older incarnation still live
// on the third (a delete task each). What it measures is the rebuild
// itself: the scan, the merge and the adoption through Raft.
func TestRebuildScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SEXTON_REBUILD_OBJECTS"))
	if n <= 0 {
		t.Skip("set SEXTON_REBUILD_OBJECTS (e.g. 1000000) to measure a rebuild")
	}
	batch := os.Getenv("SEXTON_REBUILD_BATCH")
	if batch == "" {
		batch = "1024"
	}
	rebuildCLITimeout = 20 * time.Minute
	defer func() { rebuildCLITimeout = 60 * time.Second }()
	c := startCluster(t, 3)
	const cluster = 0x5e7701d0c0ffee11
	recs := make([][]api.HolderRecord, 3)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench/%09d", i)
	}
	sort.Strings(keys)
	deletes := 0
	for i, k := range keys {
		low := uint64(1000 + 2*i)
		for h := range 3 {
			switch {
			case i%3 != h:
				recs[h] = append(recs[h], api.HolderRecord{Key: k, Tenant: "default", Incarnation: api.ObjectIncarnation{High: cluster, Low: low}, Size: 4096, CRC32C: uint32(i)})
			case i%100 == 0:
				recs[h] = append(recs[h], api.HolderRecord{Key: k, Tenant: "default", Incarnation: api.ObjectIncarnation{High: cluster, Low: low - 1}, Size: 4096, CRC32C: 7})
				deletes++
			}
		}
	}
	var addrs []string
	for h := range 3 {
		addrs = append(addrs, fakeRecordHolder(t, cluster, fmt.Sprintf("pool%d", h), recs[h]))
	}
	args := []string{"operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", strings.Join(addrs, ","),
		"--json", "--batch", batch, "--timeout", "60s"}
	start := time.Now()
	rep, _, stderr := rebuildJSON(t, args...)
	t.Logf("progress:\n%s", stderr)
	took := time.Since(start)
	// A batch whose answer was lost to a timeout is sent again and then
	// counts as already there.
	if rep.Keys != n || rep.Adopted+rep.Already != n+deletes || rep.Tasks != deletes || rep.Failed != 0 {
		t.Fatalf("report %+v; want %d keys, %d deletes", rep, n, deletes)
	}
	st, err := c.status(c.leader())
	if err != nil || st.Objects != n {
		t.Fatalf("leader has %d objects (%v), want %d", st.Objects, err, n)
	}
	t.Logf("rebuilt %d objects (%d records, %d delete tasks) over 3 holders with --batch %s in %v: %.0f objects/s",
		n, rep.Records, deletes, batch, took.Round(time.Millisecond), float64(n)/took.Seconds())
}

// fakeRecordHolder serves HolderListRecords from recs (sorted) and
// returns its address.
func fakeRecordHolder(t *testing.T, cluster uint64, pool string, recs []api.HolderRecord) string {
	t.Helper()
	seg := api.SegmentID(uuid.NewString())
	srv := transport.NewServer(transport.ServerConfig{MaxFrame: 64 << 20})
	transport.Register(srv, api.MethodHolderListRecords, func(_ context.Context, req *api.HolderListRecordsRequest) (*api.HolderListRecordsResponse, error) {
		after := req.After
		i := sort.Search(len(recs), func(i int) bool {
			r := recs[i]
			return r.Key > after.Key || (r.Key == after.Key && after.Incarnation.Less(r.Incarnation))
		})
		limit := min(max(req.Limit, 1), api.MaxRecordsPage)
		end := min(i+limit, len(recs))
		return &api.HolderListRecordsResponse{Segment: seg, ClusterID: cluster, Pool: pool,
			Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Records: recs[i:end], More: end < len(recs)}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestRebuildResumesAfterLeaderChange kills the leader while the rebuild
// is adopting (small batches of simulated, metadata-only records): the
// CLI sends the batch in flight again to the new leader, which finds it
// already applied or applies it, and every key ends up adopted once.
func TestRebuildResumesAfterLeaderChange(t *testing.T) {
	c := startCluster(t, 3)
	const cluster = 0x5e7701d0c0ffee22
	const n = 3000
	var recs [2][]api.HolderRecord
	for i := range n {
		r := api.HolderRecord{Key: fmt.Sprintf("k/%06d", i), Tenant: "default", Incarnation: api.ObjectIncarnation{High: cluster, Low: uint64(10 + i)}, Size: 10, CRC32C: 1}
		recs[0] = append(recs[0], r)
		recs[1] = append(recs[1], r)
	}
	addrs := []string{fakeRecordHolder(t, cluster, "p", recs[0]), fakeRecordHolder(t, cluster, "p", recs[1])}
	cmd := execCommand(binary, "operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", strings.Join(addrs, ","),
		"--json", "--batch", "4", "--timeout", "10s")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Kill the leader once some of the adoption has committed.
	leader := c.leader()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.status(leader)
		if err == nil && st.Objects > n/10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the adoption did not start: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	leader.kill()
	killedAt := time.Now()
	select {
	case <-done:
		t.Fatal("the rebuild finished before the leader was killed; nothing was shown")
	default:
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rebuild across a leader change: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("rebuild did not finish after the leader change\n%s", stderr.String())
	}
	var rep rebuildReport
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if rep.Keys != n || rep.Adopted+rep.Already != n || rep.Failed != 0 {
		t.Fatalf("report %+v, want %d keys adopted once", rep, n)
	}
	st, err := c.status(c.leader())
	if err != nil || st.Objects != n || st.ClusterID != cluster {
		t.Fatalf("new leader: %d objects, cluster %016x (%v); want %d objects, cluster %016x", st.Objects, st.ClusterID, err, n, uint64(cluster))
	}
	t.Logf("adopted %d, already there %d (a batch applied whose answer was lost); finished %v after the leader was killed; CLI retries:\n%s",
		rep.Adopted, rep.Already, time.Since(killedAt).Round(time.Millisecond), grepLines(stderr.String(), "retrying"))
}
