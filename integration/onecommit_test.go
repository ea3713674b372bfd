package integration

import (
	"testing"
	"time"

	"sexton/api"
	"sexton/transport"
)

// grantAndWrite asks the leader for a one-commit grant of key and writes
// value to its one replica, committing nothing.
func grantAndWrite(t *testing.T, c *cluster, h *holderNode, key string, value []byte) *api.PutStartResponse {
	t.Helper()
	ctx, cancel := ctxT(10 * time.Second)
	defer cancel()
	var g api.PutStartResponse
	if err := c.client(0).Call(ctx, api.MethodPutGrant, &api.PutStartRequest{Key: key, Size: int64(len(value)), ReplicaNum: 1}, &g); err != nil {
		t.Fatalf("PutGrant %s: %v", key, err)
	}
	r := g.Replicas[0]
	if err := holderCall(ctx, h.addr, c.token, api.MethodHolderWrite,
		&api.HolderWriteRequest{Key: key, Incarnation: g.Incarnation, Value: value, Grant: r.Grant}, nil); err != nil {
		t.Fatalf("write %s %s: %v", key, g.Incarnation, err)
	}
	return &g
}

// TestUncommittedPutBytesAreTombstonedWithoutRemount: the bytes of a
// one-commit put whose PutCommit never comes are tombstoned by their
// holder once the grant's block expired, while the holder stays mounted;
// the bytes of a put that committed stay.
func TestUncommittedPutBytesAreTombstonedWithoutRemount(t *testing.T) {
	c := startCluster(t, 1, "--commit-grant-ttl", "300ms")
	h := c.startHolder(t, "h1", "default")
	before, _ := holderStatusWith(h.addr, c.cc())

	lost := grantAndWrite(t, c, h, "lost", []byte("never committed"))
	kept := grantAndWrite(t, c, h, "kept", []byte("committed"))
	ctx, cancel := ctxT(10 * time.Second)
	defer cancel()
	if err := c.client(0).Call(ctx, api.MethodPutCommit, &api.PutCommitRequest{Key: "kept", Size: int64(len("committed")),
		Incarnation: kept.Incarnation, Replicas: kept.Replicas, Session: api.Session{ClientID: "onecommit-test", Seq: 1}}, &api.Empty{}, transport.Mutation()); err != nil {
		t.Fatalf("PutCommit kept: %v", err)
	}

	waitUnreadable(t, c, h, "lost", lost.Incarnation, 45*time.Second)
	if st, _ := holderStatusWith(h.addr, c.cc()); st.MountEpoch != before.MountEpoch {
		t.Fatalf("the holder remounted (epoch %d → %d): the reclaim must not need one", before.MountEpoch, st.MountEpoch)
	}
	// Past every ask about kept: its bytes are still there and it reads.
	time.Sleep(6 * time.Second)
	if v, err := readFromHolder(h, c.token, "kept", kept.Incarnation); err != nil || string(v) != "committed" {
		t.Fatalf("committed bytes of kept %s: %q %v, want them kept", kept.Incarnation, v, err)
	}
	gctx, gcancel := ctxT(10 * time.Second)
	defer gcancel()
	if _, _, err := c.lib().Get(gctx, "kept"); err != nil {
		t.Fatalf("get kept: %v", err)
	}
}

// TestReconcileRacingACommitNeverNamesIt: a reconcile that asks about an
// incarnation whose PutCommit has not come yet, while its block is live,
// does not name it; the commit then goes in and its bytes are never
// tombstoned.
func TestReconcileRacingACommitNeverNamesIt(t *testing.T) {
	c := startCluster(t, 1, "--commit-grant-ttl", "2s")
	h := c.startHolder(t, "h1", "default")
	st := c.waitHolderMounted(t, h)
	g := grantAndWrite(t, c, h, "k", []byte("value"))
	ref := api.ObjectRef{Key: "k", Incarnation: g.Incarnation}

	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	var rr api.ReconcileResponse
	if err := c.client(0).Call(ctx, api.MethodReconcileLocalDiskObjects, &api.ReconcileRequest{Segment: st.Segment, MountEpoch: st.MountEpoch,
		Objects: []api.ObjectRef{ref}}, &rr); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(rr.NotLive) != 0 {
		t.Fatalf("reconcile before the commit named %v: a commit may still come", rr.NotLive)
	}
	if err := c.client(0).Call(ctx, api.MethodPutCommit, &api.PutCommitRequest{Key: "k", Size: 5, Incarnation: g.Incarnation,
		Replicas: g.Replicas, Session: api.Session{ClientID: "race-test", Seq: 1}}, &api.Empty{}, transport.Mutation()); err != nil {
		t.Fatalf("PutCommit: %v", err)
	}
	// Past the block and the holder's asks about this grant.
	time.Sleep(10 * time.Second)
	if v, err := readFromHolder(h, c.token, "k", g.Incarnation); err != nil || string(v) != "value" {
		t.Fatalf("committed bytes %s: %q %v, want them kept", g.Incarnation, v, err)
	}
	var rr2 api.ReconcileResponse
	if err := c.client(0).Call(ctx, api.MethodReconcileLocalDiskObjects, &api.ReconcileRequest{Segment: st.Segment, MountEpoch: st.MountEpoch,
		Objects: []api.ObjectRef{ref}}, &rr2); err != nil || len(rr2.NotLive) != 0 {
		t.Fatalf("reconcile after the commit: %v %v, want nothing named", rr2.NotLive, err)
	}
}

// TestUncommittedBytesOfARestartedHolderAreTombstoned: a holder killed
// right after writing under a one-commit grant forgets the write; its
// mount's reconcile finds the put's block still live, so the master
// cannot name the record yet and says it is undecided, and the holder
// asks again once the block expired, long before its periodic reconcile
// (five minutes): the bytes of the put that never committed come back.
func TestUncommittedBytesOfARestartedHolderAreTombstoned(t *testing.T) {
	c := startCluster(t, 1, "--commit-grant-ttl", "3s")
	h := c.startHolder(t, "h1", "default")
	lost := grantAndWrite(t, c, h, "lost", []byte("never committed"))
	c.restartHolder(t, h) // within the block's 6 s life

	waitUnreadable(t, c, h, "lost", lost.Incarnation, 40*time.Second)
}

// waitUnreadable waits until h answers OBJECT_NOT_FOUND for the
// uncommitted bytes of (key, inc), failing with its last answer and h's
// log if d passes first.
func waitUnreadable(t *testing.T, c *cluster, h *holderNode, key string, inc api.ObjectIncarnation, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, err := readFromHolder(h, c.token, key, inc)
		if api.CodeOf(err) == api.CodeObjectNotFound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("uncommitted bytes of %s %s still readable on the holder %v after their grant (%v)\n%s", key, inc, d, err, tail(h.logText(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
