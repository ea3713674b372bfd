package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/holder"
)

// End to end with three masters and two holders: put, rm, and within a
// few seconds the tombstone is durable on the holder, the task is gone from
// the leader, and a restarted holder does not bring the object back.
func TestEndToEndDeleteIsDurableAndSurvivesHolderRestart(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client(0)
	h1 := c.startHolder(t, "h1", "p1")
	c.startHolder(t, "h2", "p2")
	value := bytes.Repeat([]byte("sexton!"), 1000)
	inc := putValue(t, c, cl, "e2e/a", "p1", value)
	keep := putValue(t, c, cl, "e2e/keep", "p1", value)
	if got, err := readFromHolder(h1, c.token, "e2e/a", inc); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("read before remove: %v", err)
	}
	mustRemove(t, c, "e2e/a")
	took := waitNoTasks(t, cl, "e2e/a", 10*time.Second)
	t.Logf("remove OK to task acked: %v", took)
	// The tombstone is durable: the holder's own files say so, read offline.
	rep, err := holder.Inspect(h1.dir)
	if err != nil {
		t.Fatal(err)
	}
	// Only the kept object is live on disk; the removed one is tombstoned
	// or, once GC has run, gone.
	if rep.LiveObjects != 1 || rep.LiveBytes != int64(len(value)) {
		t.Fatalf("on disk: %d live objects (%d bytes), %d tombstoned; want only the kept one live", rep.LiveObjects, rep.LiveBytes, rep.TombstonedObjects)
	}
	c.restartHolder(t, h1)
	if _, err := readFromHolder(h1, c.token, "e2e/a", inc); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("removed object readable from the restarted holder: %v", err)
	}
	if got, err := readFromHolder(h1, c.token, "e2e/keep", keep); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("live object lost across restart: %v", err)
	}
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	if err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: "e2e/a"}, &api.GetResponse{}); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("Get after remove: %v", err)
	}
	fsckClean(t, c)
}

// A holder SIGKILLed at every tombstone crash point in turn, then
// restarted: the object stays deleted, the task stays pending until the
// tombstone is durable and acked, and fsck comes back clean.
func TestHolderKilledAtEveryTombstoneCrashPoint(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client(0)
	points := append(append([]string(nil), holder.TombstoneCrashPoints...), "follow.before-ack")
	requireCrashPointsListed(t, points)
	value := bytes.Repeat([]byte{0xab}, 4096)
	for i, point := range points {
		h := c.startHolder(t, "crash"+string(rune('a'+i)), "pool-"+point, "SEXTON_CRASH_AT="+point)
		key := "crash/" + point
		inc := putValue(t, c, cl, key, h.pool, value)
		mustRemove(t, c, key)
		code, exited := h.wait(20 * time.Second)
		if !exited {
			t.Fatalf("%s: holder did not reach the crash point", point)
		}
		if code != -1 && code != 137 {
			t.Logf("%s: exit code %d", point, code)
		}
		// Dead at the crash point: the ack was never sent.
		if !hasTask(t, cl, key, inc) {
			t.Fatalf("%s: task acked although the holder died before acking", point)
		}
		rep, err := holder.Inspect(h.dir)
		if err != nil {
			t.Fatal(err)
		}
		durable := point == "tombstone.after-rename" || point == "tombstone.after-dir-fsync" || point == "follow.before-ack"
		if durable && rep.LiveObjects != 0 {
			t.Fatalf("%s: after the rename the committed metadata must not say live (%d live)", point, rep.LiveObjects)
		}
		if !durable && (rep.TombstonedObjects != 0 || rep.LiveObjects != 1) {
			t.Fatalf("%s: before the rename the committed metadata must still say live (%d live, %d tombstoned)", point, rep.LiveObjects, rep.TombstonedObjects)
		}
		c.restartHolder(t, h)
		waitNoTasks(t, cl, key, 15*time.Second)
		if _, err := readFromHolder(h, c.token, key, inc); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("%s: object readable after restart: %v", point, err)
		}
		rep, err = holder.Inspect(h.dir)
		if err != nil || rep.LiveObjects != 0 {
			t.Fatalf("%s: after recovery: %+v %v", point, rep, err)
		}
	}
	fsckClean(t, c)
}

// A holder SIGKILLed at every GC crash point in turn, during a real round
// that merges two partly dead buckets, then restarted: every live object
// reads back byte-identical, no removed object is visible, the next rounds
// reclaim the dead bytes, and fsck is clean.
func TestHolderKilledAtEveryGCCrashPoint(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.client(0)
	requireCrashPointsListed(t, holder.GCCrashPoints)
	// Four records a bucket, so eight puts fill two buckets.
	env := []string{holder.EnvBucketKeysLimit + "=4"}
	for i, point := range holder.GCCrashPoints {
		pool := fmt.Sprintf("gcpool%d", i)
		h := c.startHolder(t, fmt.Sprintf("gc%d", i), pool, append(env, "SEXTON_CRASH_AT="+point)...)
		live := map[string][]byte{}
		incs := map[string]api.ObjectIncarnation{}
		for j := 0; j < 8; j++ {
			key := fmt.Sprintf("gc/%d/%d", i, j)
			v := bytes.Repeat([]byte{byte(i), byte(j)}, 2048+j*100)
			incs[key] = putValue(t, c, cl, key, pool, v)
			live[key] = v
		}
		// Half of each bucket dies: the dead ratio (0.5) starts a merge.
		var removed []string
		for j := 0; j < 8; j += 2 {
			key := fmt.Sprintf("gc/%d/%d", i, j)
			mustRemove(t, c, key)
			removed = append(removed, key)
			delete(live, key)
		}
		code, exited := h.wait(30 * time.Second)
		if !exited {
			t.Fatalf("%s: the GC round never reached the crash point", point)
		}
		if code != -1 { // -1: killed by a signal (the crash point's SIGKILL)
			t.Fatalf("%s: holder exited with code %d instead of dying at the crash point:\n%s", point, code, tail(h.logText(), 2000))
		}
		// A removal the holder acknowledged before it died (its task is
		// gone) is a durable tombstone: it must hold straight after the
		// restart. One whose task the holder had not run yet (the round
		// can start before the last tombstone lands) is run after it.
		acked := map[string]bool{}
		for _, key := range removed {
			acked[key] = !hasTask(t, cl, key, incs[key])
		}
		c.restartHolder(t, h, env...)
		for key, v := range live {
			got, err := readFromHolder(h, c.token, key, incs[key])
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("%s: live %s after recovery: %v (%d bytes, want %d)", point, key, err, len(got), len(v))
			}
		}
		for _, key := range removed {
			if !acked[key] {
				waitNoTasks(t, cl, key, 30*time.Second)
			}
			if _, err := readFromHolder(h, c.token, key, incs[key]); api.CodeOf(err) != api.CodeObjectNotFound {
				t.Fatalf("%s: removed %s (acknowledged before the kill: %v) visible after recovery: %v", point, key, acked[key], err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := holderStatus(h.addr, c.token)
			if err == nil && st.DeadBytes == 0 && st.LiveObjects == len(live) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: dead bytes not reclaimed after restart: %+v %v", point, st, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The holder runs on while the directory is inspected: a GC round
		// it has just begun (an intent on disk) is its own, not one the
		// recovery left, so the intent must be gone within the deadline.
		for {
			rep, err := holder.Inspect(h.dir)
			if err == nil && len(rep.Problems) == 0 && !rep.GCIntentPending {
				break
			}
			if err != nil || len(rep.Problems) > 0 || time.Now().After(deadline) {
				t.Fatalf("%s: inspect after recovery: %v %+v (GC intent pending: %v)", point, err, rep.Problems, rep.GCIntentPending)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	fsckClean(t, c)
}

// requireCrashPointsListed fails unless `sexton debug crash-points` lists
// every one of points, so that a drill never runs a point the binary does
// not know.
func requireCrashPointsListed(t *testing.T, points []string) {
	t.Helper()
	listed := runCLI(t, "debug", "crash-points")
	for _, p := range points {
		if !strings.Contains(listed, p+"\n") {
			t.Fatalf("crash point %s not listed by sexton debug crash-points:\n%s", p, listed)
		}
	}
}

// The leader SIGKILLed between a holder's tombstone and its ack: the new
// leader still has the task, the holder replays on the epoch change, and
// the task ends acked.
func TestLeaderKilledBetweenTombstoneAndAck(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client(0)
	gate := filepath.Join(t.TempDir(), "ack-gate")
	h := c.startHolder(t, "gated", "p1", holder.EnvAckGate+"="+gate)
	inc := putValue(t, c, cl, "gate/k", "p1", []byte("value"))
	before, _ := holderStatus(h.addr, c.token)
	mustRemove(t, c, "gate/k")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(gate); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("holder never reached its ack")
		}
		time.Sleep(10 * time.Millisecond)
	}
	old := c.leader()
	old.kill()
	c.waitLeader(30 * time.Second)
	if !hasTask(t, cl, "gate/k", inc) {
		t.Fatal("the new leader lost the task of an acknowledged remove")
	}
	os.Remove(gate) // let the holder ack (against a dead leader first)
	waitNoTasks(t, cl, "gate/k", 30*time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; {
		after, err := holderStatus(h.addr, c.token)
		if err == nil && after.MasterEpoch > before.MasterEpoch {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder did not see the master epoch change: %d → %d (%v)", before.MasterEpoch, after.MasterEpoch, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(h.logText(), "master epoch changed; replaying") {
		t.Fatalf("holder did not replay on the epoch change")
	}
	old.start()
	fsckClean(t, c)
}

// A stale task (for an incarnation the holder never stored) against a
// key that was recreated on the same holder is StaleVersion, and the new
// object stays readable.
func TestStaleTaskForRecreatedKeyIsStaleVersion(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client(0)
	h := c.startHolder(t, "stale", "p1")
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	var st api.PutStartResponse
	if err := cl.Call(ctx, api.MethodPutStart, &api.PutStartRequest{Key: "stale/k", Size: 5, ReplicaNum: 1, Pool: "p1"}, &st); err != nil {
		t.Fatal(err)
	}
	if err := cl.Call(ctx, api.MethodPutRevoke, &api.PutRevokeRequest{Key: "stale/k", Incarnation: st.Incarnation}, nil); err != nil {
		t.Fatal(err)
	}
	value := []byte("fresh")
	inc2 := putValue(t, c, cl, "stale/k", "p1", value)
	waitNoTasks(t, cl, "stale/k", 10*time.Second)
	hs, err := holderStatus(h.addr, c.token)
	if err != nil || hs.TasksStale < 1 {
		t.Fatalf("holder reports %d StaleVersion outcomes (%v); want the revoked incarnation's task", hs.TasksStale, err)
	}
	if got, err := readFromHolder(h, c.token, "stale/k", inc2); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("recreated object hit by the stale task: %v", err)
	}
	var g api.GetResponse
	if err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: "stale/k"}, &g); err != nil || g.Object.Incarnation != inc2 {
		t.Fatalf("Get: %v %+v", err, g.Object)
	}
	fsckClean(t, c)
}

// A second holder process on the same directory fails at once; a holder
// that mounts the segment under a new owner fences the old epoch.
func TestSecondHolderFailsAndRemountFencesOldEpoch(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.client(0)
	h := c.startHolder(t, "first", "p1")
	st1, err := holderStatus(h.addr, c.token)
	if err != nil {
		t.Fatal(err)
	}
	second := startProc(t, "second", h.dir+".second.log", nil, "holder", "--masters", strings.Join(c.addrs(), ","), "--dir", h.dir, "--rpc-addr", freePort(t), "--client-id", "second")
	code, exited := second.wait(10 * time.Second)
	if !exited || code == 0 {
		t.Fatalf("a second holder on the same directory kept running (exited %v, code %d)", exited, code)
	}
	if !strings.Contains(second.logText(), "in use") {
		t.Fatalf("the second holder's error does not say the directory is in use:\n%s", second.logText())
	}
	// A new owner (another client id) mounts the same segment.
	h.kill()
	h.name = "new-owner"
	h.proc.args = h.args(c)
	h.proc.start()
	st2 := c.waitHolderMounted(t, h)
	if st2.Segment != st1.Segment || st2.MountEpoch != st1.MountEpoch+1 {
		t.Fatalf("new owner mounted %s at epoch %d; want %s at %d", st2.Segment, st2.MountEpoch, st1.Segment, st1.MountEpoch+1)
	}
	ctx, cancel := ctxT(10 * time.Second)
	defer cancel()
	_, err = cl.HolderLink().Fetch(ctx, &api.FetchTasksRequest{Segment: st1.Segment, MountEpoch: st1.MountEpoch, Limit: 10})
	if api.CodeOf(err) != api.CodeStaleMountEpoch {
		t.Fatalf("fetch with the old epoch: %v, want STALE_MOUNT_EPOCH", err)
	}
	_, err = cl.HolderLink().Ack(ctx, &api.AckTasksRequest{Segment: st1.Segment, MountEpoch: st1.MountEpoch,
		Results: []api.TaskResult{{TaskID: 1, Key: "x", Outcome: api.AckRemoved}}})
	if api.CodeOf(err) != api.CodeStaleMountEpoch {
		t.Fatalf("ack with the old epoch: %v, want STALE_MOUNT_EPOCH", err)
	}
}

// With no master reachable the holder keeps serving reads, and once a
// leader is back it catches up: a remove made then is tombstoned and acked.
func TestHolderServesReadsWithoutLeaderAndCatchesUp(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.client(0)
	h := c.startHolder(t, "lonely", "p1")
	value := []byte("still here")
	inc := putValue(t, c, cl, "lonely/k", "p1", value)
	m := c.nodes[0]
	m.kill()
	time.Sleep(500 * time.Millisecond)
	if got, err := readFromHolder(h, c.token, "lonely/k", inc); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("read with no master: %v", err)
	}
	m.start()
	c.waitLeader(30 * time.Second)
	mustRemove(t, c, "lonely/k")
	waitNoTasks(t, cl, "lonely/k", 30*time.Second)
	if _, err := readFromHolder(h, c.token, "lonely/k", inc); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("removed object readable: %v", err)
	}
}
