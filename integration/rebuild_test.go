package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sexton/api"
)

// TestRebuildFromHolders: three masters and three holders in two pools
// hold live, removed and overwritten objects, one overwritten key per
// round with its old copy still on a stopped holder. Every master's data
// directory is deleted and a new cluster bootstrapped on the same
// addresses; `operator rebuild` brings the table back from the holders.
// Every acknowledged live value reads back byte-identical, no removed or
// overwritten value is readable, the old copies get deleted once their
// holder mounts, new incarnations are above every old one, and fsck is
// clean.
func TestRebuildFromHolders(t *testing.T) { testRebuild(t, false) }

// TestRebuildWithHolderMissing is the same with the holder of the old
// copies down during the rebuild (--allow-missing, and its segment, which
// the other holders know of, allowed missing): when it comes back its
// mount is refused until a rerun adopts it, and only then are its old
// copies deleted.
func TestRebuildWithHolderMissing(t *testing.T) { testRebuild(t, true) }

func randomValue(t *testing.T, n int) []byte {
	t.Helper()
	v := make([]byte, n)
	if _, err := rand.Read(v); err != nil {
		t.Fatal(err)
	}
	return v
}

// startRebuildDrill starts the rebuild drills' cluster: three masters,
// h1 and h2 in pool a, h3 alone in pool b, and h3's segment.
func startRebuildDrill(t *testing.T) (c *cluster, h1, h2, h3 *holderNode, h3seg api.SegmentID) {
	t.Helper()
	c = startCluster(t, 3)
	h1 = c.startHolder(t, "h1", "a")
	h2 = c.startHolder(t, "h2", "a")
	h3 = c.startHolder(t, "h3", "b")
	return c, h1, h2, h3, c.waitHolderMounted(t, h3).Segment
}

func testRebuild(t *testing.T, missing bool) {
	c, h1, h2, h3, h3seg := startRebuildDrill(t)
	lib := c.lib()
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	live := map[string][]byte{}   // acknowledged values that must read back
	dead := map[string][][]byte{} // values that must never read back
	for i := range 8 {
		k := fmt.Sprintf("live/a/%d", i)
		live[k] = randomValue(t, 1000+i*100)
		putReplicas(t, c, k, "a", 2, live[k])
	}
	if !missing {
		// Objects only the third holder has: gone if it were missing.
		for i := range 4 {
			k := fmt.Sprintf("live/b/%d", i)
			live[k] = randomValue(t, 2000+i)
			putReplicas(t, c, k, "b", 1, live[k])
		}
	}
	// Removed, tombstoned on every holder before the masters are lost.
	for i := range 3 {
		for _, pool := range []string{"a", "b"} {
			k := fmt.Sprintf("removed/%s/%d", pool, i)
			v := randomValue(t, 500)
			putReplicas(t, c, k, pool, 1, v)
			mustRemove(t, c, k)
			dead[k] = append(dead[k], v)
		}
	}
	// Overwritten with both holders up: the old copy is already deleted.
	for i := range 3 {
		k := fmt.Sprintf("overwritten/%d", i)
		old := randomValue(t, 700)
		putReplicas(t, c, k, "b", 1, old)
		live[k] = randomValue(t, 800)
		putReplicas(t, c, k, "a", 2, live[k])
		dead[k] = append(dead[k], old)
	}
	for k := range dead {
		waitNoTasks(t, c.client(0), k, 20*time.Second)
	}
	// Overwritten while the third holder is down: its old copy stays
	// live there, with a pending delete task that dies with the masters.
	staleKeys := []string{"stale/0", "stale/1", "stale/2"}
	staleInc := map[string]api.ObjectIncarnation{}
	for _, k := range staleKeys {
		old := randomValue(t, 900)
		staleInc[k] = putReplicas(t, c, k, "b", 1, old)
		dead[k] = append(dead[k], old)
	}
	waitKnownSegment(t, c, []*holderNode{h1, h2}, h3seg)
	h3.kill()
	var maxLow uint64
	for _, k := range staleKeys {
		live[k] = randomValue(t, 1100)
		inc := putReplicas(t, c, k, "a", 2, live[k])
		maxLow = max(maxLow, inc.Low)
		if !hasTask(t, c.client(0), k, staleInc[k]) {
			t.Fatalf("%s: no pending delete task for the old copy %s on the stopped holder", k, staleInc[k])
		}
	}
	oldStatus, err := c.status(c.leader())
	if err != nil {
		t.Fatal(err)
	}
	oldCluster := oldStatus.ClusterID

	// Every master loses its state; a new cluster is bootstrapped on the
	// same addresses (the holders keep their --masters).
	c.loseEveryMaster(t)
	fresh, err := c.status(c.leader())
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ClusterID == oldCluster {
		t.Fatalf("the new cluster drew the old cluster id %016x", oldCluster)
	}
	if !missing {
		h3.proc.start() // the holder with the old copies is back for the scan
	}

	// A holder of another cluster is refused: a fresh directory started
	// against the new masters binds to the new cluster's own id.
	hx := c.startHolder(t, "hx", "a")
	hxSeg := c.waitHolderMounted(t, hx).Segment
	holders := strings.Join([]string{h1.addr, h2.addr, h3.addr}, ",")
	base := []string{"operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", holders}
	if missing {
		base = append(base, "--allow-missing", "--allow-missing-segments", string(h3seg))
	}
	out, err := runCLIErr(base...)
	if err == nil || !strings.Contains(out, "disagree") {
		t.Fatalf("rebuild with a holder of another cluster: %v, want a refusal naming the disagreement\n%s", err, out)
	}
	hx.kill()
	if out, err := runCLIErr("operator", "retire", string(hxSeg), "--by", "test", "--reason", "not of the lost cluster", "--masters", strings.Join(c.addrs(), ",")); err != nil {
		t.Fatalf("retire the foreign holder: %v\n%s", err, out)
	}

	// A dry run prints the plan and changes nothing.
	dry, stdout, _ := rebuildJSON(t, append(base, "--dry-run", "--json")...)
	wantDeletes := len(staleKeys)
	if missing {
		wantDeletes = 0
	}
	if dry.Keys != len(live) || len(dry.Adopt) != len(live) || dry.Deletes != wantDeletes {
		t.Fatalf("dry run: %d keys (%d listed), %d deletes; want %d keys, %d deletes\n%s", dry.Keys, len(dry.Adopt), dry.Deletes, len(live), wantDeletes, stdout)
	}
	if st, err := c.status(c.leader()); err != nil || st.Objects != 0 || st.ClusterID != fresh.ClusterID {
		t.Fatalf("after the dry run: %+v, %v; want nothing changed", st, err)
	}

	// The rebuild, then a repeat of it (a resumed run): idempotent.
	start := time.Now()
	rep, stdout, stderr := rebuildJSON(t, append(base, "--json", "--batch", "4")...)
	took := time.Since(start)
	if rep.ClusterID != fmt.Sprintf("%016x", oldCluster) || rep.Adopted != len(live)+wantDeletes || rep.Tasks != wantDeletes || rep.Failed != 0 || rep.Floor < maxLow {
		t.Fatalf("rebuild report %+v; want cluster %016x, %d adopted, %d tasks, floor ≥ %d\n%s", rep, oldCluster, len(live)+wantDeletes, wantDeletes, maxLow, stdout)
	}
	if !bytes.Contains(stderr, []byte(`"phase":"adopt"`)) {
		t.Errorf("no --json progress line for the adoption on stderr:\n%s", stderr)
	}
	t.Logf("rebuilt %d keys in %v", len(live), took)
	again, stdout, _ := rebuildJSON(t, append(base, "--json")...)
	if again.Adopted != 0 || again.Already != len(live)+wantDeletes || again.Tasks != 0 {
		t.Fatalf("repeated rebuild: %+v; want everything already there\n%s", again, stdout)
	}

	st, err := c.status(c.leader())
	if err != nil || st.ClusterID != oldCluster {
		t.Fatalf("after the rebuild the cluster id is %016x (%v), want the old %016x", st.ClusterID, err, oldCluster)
	}
	c.waitHolderMounted(t, h1)
	c.waitHolderMounted(t, h2)
	if missing {
		// Back after the rebuild: refused until a rerun adopts it.
		h3.proc.start()
		waitRefused(t, c, h3seg)
		adopt, stdout, _ := rebuildJSON(t, append(base, "--json")...)
		if !adopt.Rerun || adopt.Tasks != len(staleKeys) || adopt.Failed != 0 {
			t.Fatalf("adopting the late holder: %+v; want a rerun deleting its %d old copies\n%s", adopt, len(staleKeys), stdout)
		}
	}
	c.waitHolderMounted(t, h3)

	for k, v := range live {
		got, _, err := lib.Get(ctx, k)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %s after the rebuild: %d bytes, %v; want the acknowledged %d bytes", k, len(got), err, len(v))
		}
	}
	for k, olds := range dead {
		got, _, err := lib.Get(ctx, k)
		for _, old := range olds {
			if err == nil && bytes.Equal(got, old) {
				t.Fatalf("get %s returned a removed or overwritten value", k)
			}
		}
		if _, ok := live[k]; !ok && api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("get %s (removed): %v, want OBJECT_NOT_FOUND", k, err)
		}
	}
	// The old copies on the third holder are deleted once it mounts.
	deadline := time.Now().Add(20 * time.Second)
	for _, k := range staleKeys {
		for {
			_, err := readFromHolder(h3, c.token, k, staleInc[k])
			if err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the old copy of %s %s still reads from %s", k, staleInc[k], h3.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		waitNoTasks(t, c.client(0), k, 20*time.Second)
	}
	// New incarnations are the old cluster's and above every one seen.
	inc := putReplicas(t, c, "after/rebuild", "", 1, []byte("new"))
	if inc.High != oldCluster || inc.Low <= rep.Floor {
		t.Fatalf("new incarnation %s; want cluster %016x and index above %d", inc, oldCluster, rep.Floor)
	}
	k := "live/a/0"
	live[k] = randomValue(t, 321)
	if inc := putReplicas(t, c, k, "a", 2, live[k]); inc.Low <= rep.Floor {
		t.Fatalf("overwrite after the rebuild got %s, not above %d", inc, rep.Floor)
	}
	if got, _, err := lib.Get(ctx, k); err != nil || !bytes.Equal(got, live[k]) {
		t.Fatalf("get %s after overwriting it: %v", k, err)
	}
	fsckClean(t, c)
}

// rebuildCLITimeout bounds one CLI run (TestRebuildScale raises it).
var rebuildCLITimeout = 60 * time.Second

// rebuildReport is what `operator rebuild --json` prints, as the tests
// read it: the keys are spelled out here, apart from the rebuild package's
// Report, so that a renamed key fails the tests.
type rebuildReport struct {
	ClusterID string `json:"cluster_id"`
	Rerun     bool   `json:"rerun"`
	Scanned   []struct {
		Endpoint string `json:"endpoint"`
		Segment  string `json:"segment"`
		Pool     string `json:"pool"`
		Records  int    `json:"records"`
	} `json:"scanned"`
	SegmentsMissing []string `json:"segments_missing"`
	Records         int      `json:"records"`
	Keys            int      `json:"keys"`
	Deletes         int      `json:"deletes"`
	Adopted         int      `json:"adopted"`
	Already         int      `json:"already"`
	Superseded      int      `json:"superseded"`
	Tasks           int      `json:"tasks_created"`
	Failed          int      `json:"failed"`
	Floor           uint64   `json:"incarnation_floor"`
	MaxSeen         uint64   `json:"incarnation_max_seen"`
	Adopt           []struct {
		Key      string   `json:"key"`
		Segments []string `json:"segments"`
	} `json:"adopt"`
	Drop []struct {
		Key string `json:"key"`
	} `json:"drop"`
	DFSRecords int `json:"dfs_records"`
	DFSAdopted int `json:"dfs_adopted"`
}

// rebuildJSON runs the CLI with args (which ask for --json) and returns
// its report, and stdout and stderr for messages.
func rebuildJSON(t *testing.T, args ...string) (rep rebuildReport, stdout, stderr []byte) {
	t.Helper()
	stdout, stderr = runRebuildCLI(t, args...)
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("rebuild output: %v\n%s\n%s", err, stdout, stderr)
	}
	return rep, stdout, stderr
}

// runRebuildCLI runs the CLI and returns stdout and stderr apart.
func runRebuildCLI(t *testing.T, args ...string) ([]byte, []byte) {
	t.Helper()
	cmd := execCommand(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cctx, cancel := context.WithTimeout(context.Background(), rebuildCLITimeout)
	defer cancel()
	go func() {
		<-cctx.Done()
		if cmd.Process != nil && cctx.Err() == context.DeadlineExceeded {
			_ = cmd.Process.Kill()
		}
	}()
	if err := cmd.Run(); err != nil {
		t.Fatalf("sexton %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), stderr.Bytes()
}

// waitKnownSegment waits until every holder of hs reports seg among the
// segment ids of its cluster it recorded from the master's heartbeats.
func waitKnownSegment(t *testing.T, c *cluster, hs []*holderNode, seg api.SegmentID) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, h := range hs {
		for {
			ctx, cancel := ctxT(5 * time.Second)
			var page api.HolderListRecordsResponse
			err := holderCall(ctx, h.addr, c.token, api.MethodHolderListRecords, &api.HolderListRecordsRequest{Limit: 1}, &page)
			cancel()
			if err == nil && slices.Contains(page.KnownSegments, seg) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("holder %s does not know segment %s: %v %v", h.name, seg, page.KnownSegments, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// waitRefused waits until the leader lists seg's mount as refused (a late
// holder waiting for adoption) and returns what it says.
func waitRefused(t *testing.T, c *cluster, seg api.SegmentID) api.RefusedMount {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := c.status(c.leader()); err == nil {
			for _, r := range st.RefusedMounts {
				if r.Segment == seg {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader never refused the mount of %s", seg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRebuildLateHolderIsAdoptedNeverReconciled is the drill: three
// masters, three holders in two pools, one replica per put, so the third
// holder alone holds pool b's objects. The third holder is stopped (after
// one key of it was overwritten in pool a, its old copy left live there),
// every master's data directory is deleted and a fresh cluster started.
//
//   - `operator rebuild` without the stopped holder refuses: the other
//     holders' records name its segment;
//   - with the segment allowed missing it rebuilds from two holders and
//     says which it scanned;
//   - the overwritten key is removed on the rebuilt cluster and its delete
//     acknowledged;
//   - the stopped holder comes back: its mount is refused, listed by
//     status and operator segments, and nothing on it is tombstoned;
//   - a rerun adopts it: every acknowledged object reads back
//     byte-identical, and the removed key's older copy on it does not
//     come back;
//   - a key removed after that stays removed through another rerun;
//   - `operator rebuild --close` ends the window: a rerun is refused.
func TestRebuildLateHolderIsAdoptedNeverReconciled(t *testing.T) {
	c, h1, h2, h3, h3seg := startRebuildDrill(t)
	lib := c.lib()
	ctx, cancel := ctxT(120 * time.Second)
	defer cancel()
	live := map[string][]byte{}
	onH3 := 0
	for i := range 50 {
		pool := "a"
		if i%2 == 1 {
			pool = "b"
			onH3++
		}
		k := fmt.Sprintf("obj/%02d", i)
		live[k] = randomValue(t, 500+i*10)
		putReplicas(t, c, k, pool, 1, live[k])
	}
	// The key to remove later: its first value on the third holder, then
	// overwritten in pool a while that holder is down, so its old copy
	// stays live there with a delete task that dies with the masters.
	const doomed = "doomed/key"
	oldDoomed := randomValue(t, 600)
	putReplicas(t, c, doomed, "b", 1, oldDoomed)
	onH3++
	waitKnownSegment(t, c, []*holderNode{h1, h2}, h3seg)
	before, err := holderRecords(c, h3)
	if err != nil {
		t.Fatal(err)
	}
	if got := liveCount(before); got != onH3 {
		t.Fatalf("the third holder has %d live records, want %d", got, onH3)
	}
	h3.kill()
	newDoomed := randomValue(t, 650)
	putReplicas(t, c, doomed, "a", 1, newDoomed)
	old, err := c.status(c.leader())
	if err != nil {
		t.Fatal(err)
	}

	c.loseEveryMaster(t)
	masters := strings.Join(c.addrs(), ",")
	base := []string{"operator", "rebuild", "--masters", masters, "--holders", h1.addr + "," + h2.addr}

	// The stopped holder's segment is named by the others: refused.
	out, err := runCLIErr(base...)
	if err == nil || !strings.Contains(out, string(h3seg)) || !strings.Contains(out, "--allow-missing-segments") {
		t.Fatalf("rebuild without the stopped holder: %v, want a refusal naming segment %s and the override\n%s", err, h3seg, out)
	}
	if st, err := c.status(c.leader()); err != nil || st.Objects != 0 || st.ClusterID == old.ClusterID {
		t.Fatalf("after the refusal: %+v %v; want nothing changed", st, err)
	}

	// Pool a's objects and the overwritten key's new value.
	onA := len(live) - (onH3 - 1) + 1
	allow := append(base, "--allow-missing-segments", string(h3seg))
	rep, stdout, _ := rebuildJSON(t, append(allow, "--json")...)
	if rep.ClusterID != fmt.Sprintf("%016x", old.ClusterID) || len(rep.Scanned) != 2 || rep.Failed != 0 ||
		len(rep.SegmentsMissing) != 1 || rep.SegmentsMissing[0] != string(h3seg) || rep.Adopted != onA ||
		rep.Floor < rep.MaxSeen+1<<32 {
		t.Fatalf("rebuild report %+v; want 2 holders scanned, %s missing, %d adopted\n%s", rep, h3seg, onA, stdout)
	}
	for _, h := range rep.Scanned {
		if h.Endpoint != h1.addr && h.Endpoint != h2.addr || h.Pool != "a" {
			t.Fatalf("scanned %+v, want only the pool a holders", rep.Scanned)
		}
	}
	txt, err := runCLIErr(append(allow, "--dry-run")...)
	if err != nil || !strings.Contains(txt, "scanned holder "+h1.addr) || !strings.Contains(txt, "missing segment "+string(h3seg)) {
		t.Fatalf("text report: %v\n%s", err, txt)
	}
	c.waitHolderMounted(t, h1)
	c.waitHolderMounted(t, h2)

	// The overwritten key is removed on the rebuilt cluster, its delete
	// done: nothing of it is left in the table.
	mustRemove(t, c, doomed)
	waitNoTasks(t, c.client(0), doomed, 20*time.Second)

	// The stopped holder comes back: refused, nothing tombstoned.
	h3.proc.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := holderStatusWith(h3.addr, c.cc()); err == nil {
			break // up; its follow loop asks to mount at once
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late holder never came up:\n%s", tail(h3.logText(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // several mount attempts (and a reconcile, were it mounted)
	after, err := holderRecords(c, h3)
	if err != nil {
		t.Fatal(err)
	}
	if got := liveCount(after); got != onH3 || len(after) != len(before) {
		t.Fatalf("the late holder has %d live of %d records, had %d of %d: its copies were tombstoned", got, len(after), onH3, len(before))
	}
	if st, err := holderStatusWith(h3.addr, c.cc()); err != nil || st.Mounted {
		t.Fatalf("the late holder mounted (%+v, %v) before it was adopted", st, err)
	}
	r := waitRefused(t, c, h3seg)
	if r.Endpoint != h3.addr || r.Pool != "b" || r.MarkerCluster == nil || *r.MarkerCluster != old.ClusterID || !strings.Contains(r.Reason, "SEGMENT_NEEDS_ADOPTION") {
		t.Fatalf("refused mount %+v", r)
	}
	segs, err := runCLIErr("operator", "segments", "--json", "--masters", masters)
	if err != nil || !strings.Contains(segs, `"refused"`) || !strings.Contains(segs, string(h3seg)) {
		t.Fatalf("operator segments does not list the refused holder: %v\n%s", err, segs)
	}

	// A rerun adopts it (the refused holder's endpoint is scanned).
	adopt, stdout, _ := rebuildJSON(t, "operator", "rebuild", "--masters", masters, "--json")
	if !adopt.Rerun || adopt.Failed != 0 || len(adopt.Scanned) != 3 {
		t.Fatalf("adoption rerun %+v; want 3 holders scanned\n%s", adopt, stdout)
	}
	c.waitHolderMounted(t, h3)
	for k, v := range live {
		got, _, err := lib.Get(ctx, k)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %s after the adoption: %d bytes, %v; want the acknowledged %d bytes", k, len(got), err, len(v))
		}
	}
	if got, _, err := lib.Get(ctx, doomed); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("the removed %s came back (%d bytes, %v)", doomed, len(got), err)
	}
	// Adopted: the objects only it holds; its older copy of the removed
	// key is superseded (the removal memory knows the key), so it becomes
	// a delete task, never visible again.
	if adopt.Adopted != onH3-1 || adopt.Deletes != 0 || adopt.Superseded != 1 {
		t.Fatalf("adoption rerun %+v; want %d adopted, 1 superseded\n%s", adopt, onH3-1, stdout)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		recs, err := holderRecords(c, h3)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(recs, func(r api.HolderRecord) bool { return r.Key == doomed && r.Tombstoned }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late holder's old copy of %s was never tombstoned", doomed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitNoTasks(t, c.client(0), doomed, 20*time.Second)

	// A key removed now stays removed through another rerun.
	gone := "obj/01" // on the third holder
	mustRemove(t, c, gone)
	waitNoTasks(t, c.client(0), gone, 20*time.Second)
	runRebuildCLI(t, "operator", "rebuild", "--masters", masters, "--json")
	for _, k := range []string{gone, doomed} {
		if got, _, err := lib.Get(ctx, k); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("the removed %s came back after a rerun (%d bytes, %v)", k, len(got), err)
		}
	}
	delete(live, gone)
	for k, v := range live {
		if got, _, err := lib.Get(ctx, k); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %s after the last rerun: %v", k, err)
		}
	}
	fsckClean(t, c)

	// Closing the adoption window ends reruns for good.
	closed, err := runCLIErr("operator", "rebuild", "--close", "--json", "--masters", masters)
	if err != nil || !strings.Contains(closed, `"closed": true`) {
		t.Fatalf("rebuild --close: %v\n%s", err, closed)
	}
	if st, err := c.status(c.leader()); err != nil || st.Rebuild == nil || !st.Rebuild.Closed || st.Rebuild.RemovedKeys != 0 {
		t.Fatalf("status after the close: %+v %v", st.Rebuild, err)
	}
	if out, err := runCLIErr("operator", "rebuild", "--masters", masters); err == nil || !strings.Contains(out, "closed") {
		t.Fatalf("a rerun after the close: %v, want a refusal\n%s", err, out)
	}
}

// holderRecords reads every record of h.
func holderRecords(c *cluster, h *holderNode) ([]api.HolderRecord, error) {
	var out []api.HolderRecord
	req := api.HolderListRecordsRequest{Limit: api.MaxRecordsPage}
	for {
		ctx, cancel := ctxT(10 * time.Second)
		var page api.HolderListRecordsResponse
		err := holderCall(ctx, h.addr, c.token, api.MethodHolderListRecords, &req, &page)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list records of %s: %w", h.name, err)
		}
		out = append(out, page.Records...)
		if !page.More || len(page.Records) == 0 {
			return out, nil
		}
		last := page.Records[len(page.Records)-1]
		req.After = api.ObjectRef{Key: last.Key, Incarnation: last.Incarnation}
	}
}

func liveCount(recs []api.HolderRecord) int {
	n := 0
	for _, r := range recs {
		if !r.Tombstoned {
			n++
		}
	}
	return n
}
