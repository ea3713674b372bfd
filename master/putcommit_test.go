package master

import (
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
)

func (tc *testCluster) putGrant(t testing.TB, key string) *api.PutStartResponse {
	t.Helper()
	var g api.PutStartResponse
	if err := tc.call(api.MethodPutGrant, &api.PutStartRequest{Key: key, Size: 10, ReplicaNum: 1}, &g); err != nil {
		t.Fatalf("PutGrant %s: %v", key, err)
	}
	return &g
}

func (tc *testCluster) putCommit(key string, g *api.PutStartResponse, sess api.Session) error {
	return tc.call(api.MethodPutCommit, &api.PutCommitRequest{Key: key, Size: 10, Incarnation: g.Incarnation, Replicas: g.Replicas, Session: sess}, &api.Empty{})
}

// grantAndCommitAbove grants a put of key, fails unless its incarnation is
// above below, and commits it; what names the case.
func (tc *testCluster) grantAndCommitAbove(t testing.TB, key string, below api.ObjectIncarnation, what string) {
	t.Helper()
	g := tc.putGrant(t, key)
	if !below.Less(g.Incarnation) {
		t.Fatalf("grant %s of %s %s: not above %s", g.Incarnation, key, what, below)
	}
	if err := tc.putCommit(key, g, api.Session{}); err != nil {
		t.Fatalf("commit of %s %s: %v", key, what, err)
	}
}

// TestPutGrantAndCommitIsOneEntryPut: PutGrant answers an incarnation with
// a grant its holder accepts and commits nothing; PutCommit makes it the
// key's value; a commit whose grant does not match, or of an incarnation
// at or below the key's, is refused; a new leader hands out incarnations
// above every one the old leader handed out.
func TestPutGrantAndCommitIsOneEntryPut(t *testing.T) {
	tc := startCluster(t, 3)
	a := tc.mountHolder(t, "seg-a", "")
	tc.mountHolder(t, "seg-b", "")
	gk := mountGrantKey(t, a)

	g1 := tc.putGrant(t, "k")
	g2 := tc.putGrant(t, "k")
	if !g1.Incarnation.Less(g2.Incarnation) {
		t.Fatalf("grants %s then %s: not increasing", g1.Incarnation, g2.Incarnation)
	}
	r := g1.Replicas[0]
	if err := grant.Verify(gk, r.Grant, r.Segment, "k", g1.Incarnation, 10, time.Now()); err != nil {
		t.Fatalf("grant refused by its segment: %v", err)
	}
	if _, err := tc.get("k"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get after a grant alone: %v, want OBJECT_NOT_FOUND (a grant commits nothing)", err)
	}

	// A grant for another key, or moved to another segment, is refused.
	forged := *g1
	forged.Replicas = append([]api.ReplicaLocation(nil), g1.Replicas...)
	forged.Replicas[0].Segment = "seg-b"
	if r.Segment == "seg-b" {
		forged.Replicas[0].Segment = "seg-a"
	}
	if err := tc.putCommit("k", &forged, api.Session{}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("commit with a grant moved to another segment: %v, want INVALID_PARAMS", err)
	}
	if err := tc.putCommit("other", g1, api.Session{}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("commit with another key's grant: %v, want INVALID_PARAMS", err)
	}
	// The grant binds the size the holders stored: a commit of another
	// size would name copies whose length is not the object's.
	if err := tc.call(api.MethodPutCommit, &api.PutCommitRequest{Key: "k", Size: 11, Incarnation: g1.Incarnation, Replicas: g1.Replicas}, &api.Empty{}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("commit of 11 bytes with a grant for 10: %v, want INVALID_PARAMS", err)
	}

	// The later grant commits first; the earlier one may then not commit
	// below it.
	if err := tc.putCommit("k", g2, api.Session{ClientID: "c", Seq: 1}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := tc.putCommit("k", g2, api.Session{ClientID: "c", Seq: 1}); err != nil {
		t.Fatalf("repeated commit in its session: %v, want the first answer", err)
	}
	if o, err := tc.get("k"); err != nil || o.Incarnation != g2.Incarnation {
		t.Fatalf("get: %v %v, want %s", o, err, g2.Incarnation)
	}
	if err := tc.putCommit("k", g1, api.Session{}); api.CodeOf(err) != api.CodeIncarnationStale {
		t.Fatalf("commit below the key's incarnation: %v, want INCARNATION_STALE", err)
	}

	// A key put through PutStart holds an incarnation above the block in
	// use: the next grant for it comes from a block above that, so its
	// commit is not refused.
	tc.put(t, "m", 10, 1)
	mInc, err := tc.get("m")
	if err != nil {
		t.Fatal(err)
	}
	tc.grantAndCommitAbove(t, "m", mInc.Incarnation, "over a PutStart put")

	// DFS puts keep PutStart/PutEnd.
	var g api.PutStartResponse
	if err := tc.call(api.MethodPutGrant, &api.PutStartRequest{Key: "d", Size: 10, DFSReplicaNum: 1}, &g); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("PutGrant with a DFS replica: %v, want INVALID_PARAMS", err)
	}

	// A new leader reserves its own block, above the old one's.
	tc.kill(tc.leaderIndex(t))
	tc.waitLeader(t)
	tc.grantAndCommitAbove(t, "k", g2.Incarnation, "under the new leader, above the old leader's grant")
}

// TestPutCommitAfterBlockExpiryIsRefused: a put whose writes outlive its
// incarnation block cannot commit, on any leader; the client gets
// INCARNATION_STALE and must be granted again.
func TestPutCommitAfterBlockExpiryIsRefused(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) { c.CommitGrantTTL = 200 * time.Millisecond })
	tc.mountHolder(t, "seg-a", "")
	g := tc.putGrant(t, "k")
	time.Sleep(700 * time.Millisecond) // past the block (2 × 200 ms)
	if err := tc.putCommit("k", g, api.Session{}); api.CodeOf(err) != api.CodeIncarnationStale {
		t.Fatalf("commit after the block expired: %v, want INCARNATION_STALE", err)
	}
	g2 := tc.putGrant(t, "k")
	if err := tc.putCommit("k", g2, api.Session{}); err != nil {
		t.Fatalf("commit of a fresh grant: %v", err)
	}
}

// TestBatchPutCommitAnswersPerItem: a batch commits its granted items in
// one entry, answers an item whose grant does not match with its own
// error (never proposed), and a repeat in its session answers the same.
func TestBatchPutCommitAnswersPerItem(t *testing.T) {
	tc := startCluster(t, 3)
	tc.mountHolder(t, "seg-a", "")
	ga, gc := tc.putGrant(t, "a"), tc.putGrant(t, "c")
	item := func(key string, g *api.PutStartResponse) api.PutCommitRequest {
		return api.PutCommitRequest{Key: key, Size: 10, Incarnation: g.Incarnation, Replicas: g.Replicas}
	}
	req := &api.BatchPutCommitRequest{Items: []api.PutCommitRequest{item("a", ga), item("b", gc), item("c", gc)},
		Session: api.Session{ClientID: "batch", Seq: 1}}
	var first, again api.BatchPutEndResponse
	if err := tc.call(api.MethodBatchPutCommit, req, &first); err != nil {
		t.Fatal(err)
	}
	if err := tc.call(api.MethodBatchPutCommit, req, &again); err != nil {
		t.Fatal(err)
	}
	for _, resp := range []api.BatchPutEndResponse{first, again} {
		if len(resp.Results) != 3 || resp.Results[0].Err != nil || api.CodeOf(resp.Results[1].Err) != api.CodeInvalidParams || resp.Results[2].Err != nil {
			t.Fatalf("results %+v: want a ok, b INVALID_PARAMS (c's grant), c ok", resp.Results)
		}
	}
	for key, g := range map[string]*api.PutStartResponse{"a": ga, "c": gc} {
		if o, err := tc.get(key); err != nil || o.Incarnation != g.Incarnation {
			t.Fatalf("get %s: %v %v, want %s", key, o, err, g.Incarnation)
		}
	}
	if _, err := tc.get("b"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get b: %v, want OBJECT_NOT_FOUND", err)
	}
}
