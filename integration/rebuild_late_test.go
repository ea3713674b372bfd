package integration

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sexton/api"
)

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
