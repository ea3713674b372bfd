package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
	"sexton/internal/testutil"
	"sexton/transport"
)

// startDFSCluster starts n masters with a DFS root, the directory "dfs"
// in a temporary directory (so that a test may move it away and back),
// and returns the root and the masters' environment: dfsEnv with extra.
func startDFSCluster(t *testing.T, n int, extra ...string) (root string, env []string, c *cluster) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "dfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	env = dfsEnv(root, extra...)
	return root, env, startClusterEnv(t, n, env)
}

// dfsEnv is the MOONCAKE_DFS_* environment of masters and clients: a
// bucket allocator with small buckets below root.
func dfsEnv(root string, extra ...string) []string {
	return append([]string{
		"MOONCAKE_DFS_ROOT_DIR=" + root,
		"MOONCAKE_DFS_ALLOCATOR=bucket",
		"MOONCAKE_DFS_BUCKET_CAPACITY=65536",
		"MOONCAKE_DFS_MAX_BUCKET_COUNT=8",
		"MOONCAKE_DFS_EVICTION_CHECK_INTERVAL=1",
	}, extra...)
}

// dfsCLI runs the sexton CLI with the DFS environment.
func dfsCLI(t *testing.T, c *cluster, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--masters", strings.Join(c.addrs(), ","))...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// dfsPut stores value under key as a DFS-only object through the CLI.
func dfsPut(t *testing.T, c *cluster, env []string, key string, value []byte) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "v")
	if err := os.WriteFile(f, value, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := dfsCLI(t, c, env, "put", "--dfs-replicas", "1", key, f); err != nil {
		t.Fatalf("put %s: %v\n%s", key, err, out)
	}
}

// dfsGet reads key back through the CLI.
func dfsGet(t *testing.T, c *cluster, env []string, key string) []byte {
	t.Helper()
	f := filepath.Join(t.TempDir(), "out")
	if out, err := dfsCLI(t, c, env, "get", key, "-o", f); err != nil {
		t.Fatalf("get %s: %v\n%s", key, err, out)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// getObject returns key's COMPLETE object as the master serves it.
func getObject(t *testing.T, cl *transport.ClusterClient, key string) api.GetResponse {
	t.Helper()
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	var g api.GetResponse
	if err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &g); err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return g
}

// dfsDesc returns key's DFS descriptor as the master serves it.
func dfsDesc(t *testing.T, cl *transport.ClusterClient, key string) api.DFSDescriptor {
	t.Helper()
	g := getObject(t, cl, key)
	for _, r := range g.Object.Replicas {
		if r.Kind == api.ReplicaDFS && r.DFS != nil {
			return *r.DFS
		}
	}
	t.Fatalf("%s has no DFS replica: %+v", key, g.Object.Replicas)
	return api.DFSDescriptor{}
}

func dfsStatus(t *testing.T, cl *transport.ClusterClient) api.DFSStatusResponse {
	t.Helper()
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	var st api.DFSStatusResponse
	if err := cl.Call(ctx, api.MethodDFSStatus, &api.Empty{}, &st); err != nil {
		t.Fatalf("dfs status: %v", err)
	}
	return st
}

func value(key string, n int) []byte {
	return bytes.Repeat([]byte(key+"|"), n/(len(key)+1)+1)[:n]
}

// openDFSRoot opens the masters' DFS root as a test reads it: its
// bucket files and the range records of its journal.
func openDFSRoot(t *testing.T, root string) *dfsio.Posix {
	t.Helper()
	fs, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// waitRemovalRecords waits until the root's journal holds a removal
// record through the removed incarnation (the key's removal, not an
// overwrite's) of every key given.
func waitRemovalRecords(t *testing.T, fs *dfsio.Posix, timeout time.Duration, keys ...string) {
	t.Helper()
	testutil.WaitFor(t, timeout, func() bool {
		recs, _, err := fs.ScanRecords()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if r.Op == dfsio.RecordRemoved && r.Through {
				seen[r.Key] = true
			}
		}
		for _, k := range keys {
			if !seen[k] {
				return false
			}
		}
		return true
	}, fmt.Sprintf("the removal records of %v", keys))
}

// requireNoOverlap fails if two descriptors share a byte of one file.
func requireNoOverlap(t *testing.T, ds map[string]api.DFSDescriptor) {
	t.Helper()
	var rs []testutil.FileRange
	for k, d := range ds {
		rs = append(rs, testutil.FileRange{Who: k, Path: d.Path, Off: d.Offset, Size: d.AlignedSize})
	}
	if a, b, ok := testutil.Overlap(rs); ok {
		t.Fatalf("%s [%d,+%d) overlaps %s [%d,+%d) in %s", b.Who, b.Off, b.Size, a.Who, a.Off, a.Size, b.Path)
	}
}

// Three masters, DFS root in a temp dir: put with a DFS replica, SIGKILL
// the leader; the new leader serves the objects and keeps allocating after
// the old cursor.
func TestDFSFailoverServesAndAllocatesAfterOldCursor(t *testing.T) {
	root, env, c := startDFSCluster(t, 3)
	cl := c.client(0)
	descs := map[string]api.DFSDescriptor{}
	var maxEnd int64
	for i := 0; i < 4; i++ {
		k := fmt.Sprintf("dfs/a%d", i)
		dfsPut(t, c, env, k, value(k, 3000+i*1000))
		descs[k] = dfsDesc(t, cl, k)
		maxEnd = max(maxEnd, descs[k].Offset+descs[k].AlignedSize)
	}
	// The bytes are in the bucket file at the descriptor's offset.
	d := descs["dfs/a1"]
	raw, err := os.ReadFile(filepath.Join(root, d.Path))
	if err != nil || !bytes.Equal(raw[d.Offset:d.Offset+d.Size], value("dfs/a1", 4000)) {
		t.Fatalf("bucket file does not hold dfs/a1 at offset %d: %v", d.Offset, err)
	}
	old := c.leader()
	old.kill()
	c.waitLeader(30 * time.Second)
	for i := 0; i < 4; i++ {
		k := fmt.Sprintf("dfs/a%d", i)
		if got := dfsGet(t, c, env, k); !bytes.Equal(got, value(k, 3000+i*1000)) {
			t.Fatalf("after failover %s reads %d bytes, want its value", k, len(got))
		}
		if dd := dfsDesc(t, cl, k); dd != descs[k] {
			t.Fatalf("after failover %s moved: %+v, was %+v", k, dd, descs[k])
		}
	}
	for i := 0; i < 3; i++ {
		k := fmt.Sprintf("dfs/b%d", i)
		dfsPut(t, c, env, k, value(k, 5000))
		nd := dfsDesc(t, cl, k)
		if nd.UnitID == d.UnitID && nd.Offset < maxEnd {
			t.Fatalf("new leader allocated %s at %d, below the old cursor %d", k, nd.Offset, maxEnd)
		}
		descs[k] = nd
	}
	requireNoOverlap(t, descs)
	old.start()
	c.waitLeader(30 * time.Second)
}

// A snapshot saved on one cluster and restored into a fresh one keeps the
// allocator: objects readable, next allocation after the old ones, same
// bucket ids.
func TestDFSSnapshotRestoreKeepsAllocator(t *testing.T) {
	_, env, a := startDFSCluster(t, 1)
	acl := a.client(0)
	descs := map[string]api.DFSDescriptor{}
	for i := 0; i < 3; i++ {
		k := fmt.Sprintf("snapdfs/%d", i)
		dfsPut(t, a, env, k, value(k, 10000))
		descs[k] = dfsDesc(t, acl, k)
	}
	before := dfsStatus(t, acl)
	file := filepath.Join(t.TempDir(), "dfs.snap")
	runCLI(t, "operator", "snapshot", "save", file, "--masters", strings.Join(a.addrs(), ","))
	// head + meta + 1 bucket + 3 entries
	if out := runCLI(t, "operator", "snapshot", "inspect", file); !strings.Contains(out, "dfs records: 6") {
		t.Fatalf("inspect shows no dfs_buckets section of 6 records:\n%s", out)
	}
	for _, m := range a.nodes {
		m.kill() // one leader at a time below the root
	}
	b := startClusterEnv(t, 1, env)
	runCLI(t, "operator", "snapshot", "restore", file, "--masters", strings.Join(b.addrs(), ","))
	b.waitLeader(30 * time.Second)
	bcl := b.client(0)
	after := dfsStatus(t, bcl)
	if after.NextBucketID != before.NextBucketID || after.Entries != before.Entries || after.Used != before.Used {
		t.Fatalf("allocator after restore: next %d entries %d used %d; before: %d %d %d",
			after.NextBucketID, after.Entries, after.Used, before.NextBucketID, before.Entries, before.Used)
	}
	for k, d := range descs {
		if got := dfsGet(t, b, env, k); !bytes.Equal(got, value(k, 10000)) {
			t.Fatalf("restored %s unreadable", k)
		}
		if dd := dfsDesc(t, bcl, k); dd != d {
			t.Fatalf("restored %s: %+v, want %+v", k, dd, d)
		}
	}
	dfsPut(t, b, env, "snapdfs/new", value("new", 100))
	descs["snapdfs/new"] = dfsDesc(t, bcl, "snapdfs/new")
	requireNoOverlap(t, descs)
}

// A bucket file the state does not know is reported and, after the grace
// period, removed; the files the state knows stay.
func TestDFSStrayBucketFileReportedAndRemoved(t *testing.T) {
	root, env, c := startDFSCluster(t, 1)
	cl := c.client(0)
	dfsPut(t, c, env, "stray/live", value("live", 100))
	live := dfsDesc(t, cl, "stray/live")
	stray := dfsalloc.BucketPath(4242)
	if err := os.WriteFile(filepath.Join(root, stray), []byte("left by a failed preallocation"), 0o644); err != nil {
		t.Fatal(err)
	}
	reported := false
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		st := dfsStatus(t, cl)
		for _, s := range st.StrayFiles {
			reported = reported || strings.HasPrefix(s, stray)
		}
		if _, err := os.Stat(filepath.Join(root, stray)); os.IsNotExist(err) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !reported || !strings.Contains(c.nodes[0].logText(), "stray DFS file") {
		t.Fatalf("stray %s never reported (status or log)", stray)
	}
	if _, err := os.Stat(filepath.Join(root, stray)); !os.IsNotExist(err) {
		t.Fatalf("stray %s still there after the grace period: %v", stray, err)
	}
	if !strings.Contains(c.nodes[0].logText(), "stray DFS file removed") {
		t.Fatal("removal of the stray not logged")
	}
	if got := dfsGet(t, c, env, "stray/live"); !bytes.Equal(got, value("live", 100)) {
		t.Fatal("live object lost")
	}
	if _, err := os.Stat(filepath.Join(root, live.Path)); err != nil {
		t.Fatalf("known bucket file gone: %v", err)
	}
}

// An evicted bucket whose file cannot be deleted stays charged and its
// deletion is retried until it succeeds. The test runs as any user, root
// included, so the file is made undeletable by unlink(2) by replacing it
// with a non-empty directory of the same name (unlink of a directory fails
// with EISDIR even for root; a read-only directory would not stop root).
func TestDFSEvictionDeleteFailureRetriedWhileCharged(t *testing.T) {
	root := t.TempDir()
	// 16 KiB buckets: four 4 KiB entries fill one. No deferral, so the
	// evicted bucket's file is due for deletion at once.
	env := dfsEnv(root, "MOONCAKE_DFS_BUCKET_CAPACITY=16384", "MOONCAKE_DFS_DEFERRED_FREE_SECONDS=0")
	c := startClusterEnv(t, 1, env)
	cl := c.client(0)
	var keys []string
	for i := 0; i < 5; i++ {
		k := fmt.Sprintf("evict/%d", i)
		dfsPut(t, c, env, k, value(k, 4096))
		keys = append(keys, k)
	}
	first := dfsDesc(t, cl, keys[0])
	if last := dfsDesc(t, cl, keys[4]); last.UnitID == first.UnitID {
		t.Fatalf("fifth entry landed in bucket %d too; the first bucket should be sealed", first.UnitID)
	}
	path := filepath.Join(root, first.Path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "pin"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := ctxT(20 * time.Second)
	var rr api.BatchRemoveResponse
	if err := cl.Call(ctx, api.MethodBatchRemove, &api.KeysRequest{Keys: keys[:4]}, &rr); err != nil {
		t.Fatal(err)
	}
	cancel()
	unit := func(st api.DFSStatusResponse) (api.DFSUnitStatus, bool) {
		for _, u := range st.Units {
			if u.Unit == first.UnitID {
				return u, true
			}
		}
		return api.DFSUnitStatus{}, false
	}
	deadline := time.Now().Add(40 * time.Second)
	var st api.DFSStatusResponse
	for time.Now().Before(deadline) {
		st = dfsStatus(t, cl)
		if u, ok := unit(st); ok && u.State == "deleting" && u.DeleteFailures >= 2 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	u, ok := unit(st)
	if !ok || u.State != "deleting" || u.DeleteFailures < 2 {
		t.Fatalf("evicted bucket %d: %+v (found %v); want deleting with at least 2 failed deletions", first.UnitID, u, ok)
	}
	if st.PendingDeletions != 1 || st.ChargedBuckets != 2 {
		t.Fatalf("while its deletion fails: %d pending deletions, %d charged buckets; want 1 and 2", st.PendingDeletions, st.ChargedBuckets)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st = dfsStatus(t, cl)
		if _, ok := unit(st); !ok {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, ok := unit(st); ok || st.PendingDeletions != 0 || st.ChargedBuckets != 1 {
		t.Fatalf("after the obstacle is gone: %+v", st)
	}
	if got := dfsGet(t, c, env, keys[4]); !bytes.Equal(got, value(keys[4], 4096)) {
		t.Fatal("live object in the other bucket lost")
	}
}

// A client whose DFS settings differ from the master's refuses DFS reads
// and writes, naming the mismatch.
func TestDFSClientWithOtherSettingsRefuses(t *testing.T) {
	root, env, c := startDFSCluster(t, 1)
	dfsPut(t, c, env, "mm/k", value("k", 10))
	other := append(dfsEnv(root), "MOONCAKE_DFS_BUCKET_CAPACITY=131072")
	out, err := dfsCLI(t, c, other, "get", "mm/k")
	if err == nil || !strings.Contains(out, "DFS_CONFIG_MISMATCH") || !strings.Contains(out, "MOONCAKE_DFS_BUCKET_CAPACITY") {
		t.Fatalf("get with another capacity: %v\n%s", err, out)
	}
	f := filepath.Join(t.TempDir(), "v")
	_ = os.WriteFile(f, []byte("x"), 0o644)
	out, err = dfsCLI(t, c, other, "put", "--dfs-replicas", "1", "mm/k2", f)
	if err == nil || !strings.Contains(out, "DFS_CONFIG_MISMATCH") {
		t.Fatalf("put with another capacity: %v\n%s", err, out)
	}
	out, err = dfsCLI(t, c, dfsEnv(t.TempDir()), "get", "mm/k")
	if err == nil || !strings.Contains(out, "MOONCAKE_DFS_ROOT_DIR") {
		t.Fatalf("get with another root: %v\n%s", err, out)
	}
	// The refused put's range is held until the leader has written its
	// removal record to the root's journal.
	testutil.WaitFor(t, 20*time.Second, func() bool { return dfsStatus(t, c.client(0)).Entries == 1 }, "the refused put's range freed")
	out, _ = dfsCLI(t, c, env, "operator", "dfs", "status")
	if !strings.Contains(out, "allocator:         bucket") || !strings.Contains(out, "entries:           1") {
		t.Fatalf("dfs status:\n%s", out)
	}
	if out, err := dfsCLI(t, c, env, "operator", "dfs", "set-max-buckets", "3"); err != nil {
		t.Fatalf("set-max-buckets: %v\n%s", err, out)
	}
	if st := dfsStatus(t, c.client(0)); st.MaxBuckets != 3 {
		t.Fatalf("max buckets %d after set-max-buckets 3", st.MaxBuckets)
	}
}

// A file the state needs that is missing at a leader's start marks its
// entries lost: the objects are gone, loudly, never a silent gap.
func TestDFSMissingBucketFileMarkedLostAtLeaderStart(t *testing.T) {
	root, env, c := startDFSCluster(t, 1)
	cl := c.client(0)
	dfsPut(t, c, env, "lost/k", value("k", 100))
	d := dfsDesc(t, cl, "lost/k")
	m := c.nodes[0]
	m.kill()
	if err := os.Remove(filepath.Join(root, d.Path)); err != nil {
		t.Fatal(err)
	}
	m.start()
	c.waitLeader(30 * time.Second)
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := ctxT(5 * time.Second)
		err = cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: "lost/k"}, &api.GetResponse{})
		cancel()
		if api.CodeOf(err) == api.CodeObjectNotFound {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("object of a missing bucket file still served: %v", err)
	}
	if log := m.logText(); !strings.Contains(log, "DFS FILE MISSING") || !strings.Contains(log, "lost/k") {
		t.Fatal("the loss was not logged loudly with the key")
	}
	if st := dfsStatus(t, cl); st.Lost != 1 {
		t.Fatalf("lost units %d, want 1", st.Lost)
	}
}

// Fault 6: a DFS root that is not mounted when a leader starts (an empty
// directory where the DFS should be) must not make every DFS file look
// lost. The leader refuses its DFS duties, says so loudly, marks nothing
// lost, and resumes when the root is back; the object is served again.
func TestDFSUnmountedRootMarksNothingLost(t *testing.T) {
	root, env, c := startDFSCluster(t, 1)
	cl := c.client(0)
	dfsPut(t, c, env, "root/k", value("k", 100))
	m := c.nodes[0]
	m.kill()
	away := root + ".away"
	if err := os.Rename(root, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil { // the bare mount point
		t.Fatal(err)
	}
	m.start()
	c.waitLeader(30 * time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for log := m.logText(); !strings.Contains(log, "DFS ROOT UNUSABLE") && !strings.Contains(log, "DFS FILE MISSING"); log = m.logText() {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // room for a wrong DFSMarkLost to commit
	if st := dfsStatus(t, cl); st.Lost != 0 {
		t.Fatalf("lost units %d while the root was unmounted, want 0", st.Lost)
	}
	if strings.Contains(m.logText(), "DFS FILE MISSING") {
		t.Fatal("a file was judged missing under an unusable root")
	}
	if !strings.Contains(m.logText(), "DFS ROOT UNUSABLE") {
		t.Fatal("the leader did not report the unusable DFS root")
	}
	if _, err := os.Stat(root + "/.sexton_dfs_root"); !os.IsNotExist(err) {
		t.Fatalf("the leader marked the bare mount point as the cluster's root: %v", err)
	}
	// Mount it back: the duties resume and the object reads back.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, root); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(m.logText(), "DFS root usable again") {
		if time.Now().After(deadline) {
			t.Fatal("the leader did not resume its DFS duties")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := dfsGet(t, c, env, "root/k"); string(got) != string(value("k", 100)) {
		t.Fatal("the object did not read back after the root came back")
	}
	if st := dfsStatus(t, cl); st.Lost != 0 {
		t.Fatalf("lost units %d, want 0", st.Lost)
	}
}
