package master

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/testutil"
)

func sess(client string, seq uint64) api.Session { return api.Session{ClientID: client, Seq: seq} }

// waitApplied waits until every running node applied what the leader has.
func (tc *testCluster) waitApplied(t *testing.T) {
	t.Helper()
	want := tc.waitLeader(t).fsm.Stats().AppliedIndex
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if n != nil && n.fsm.Stats().AppliedIndex < want {
				return false
			}
		}
		return true
	}, "every node caught up with the leader")
}

// TestRetriedRemoveDoesNotDeleteANewerPut is fault 1: client A's Remove of
// k executes, but A does not get the answer; the leader changes, client B
// puts k again and completes it; A retries its Remove with the same
// session. The retry must answer A's first result and leave B's object on
// every node.
func TestRetriedRemoveDoesNotDeleteANewerPut(t *testing.T) {
	tc := startCluster(t, 3)
	tc.mountHolder(t, "seg-a", "")
	first := tc.put(t, "k", 1, 1)
	removeA := &api.RemoveRequest{Key: "k", Session: sess("client-a", 1)}
	if err := tc.call(api.MethodRemove, removeA, &api.Empty{}); err != nil {
		t.Fatal(err)
	}
	tc.kill(tc.leaderIndex(t))
	tc.waitLeader(t)

	ps, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-b", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.call(api.MethodPutEnd, &api.PutEndRequest{Key: "k", Incarnation: ps.Incarnation, Session: sess("client-b", 2)}, &api.Empty{}); err != nil {
		t.Fatal(err)
	}
	if err := tc.call(api.MethodRemove, removeA, &api.Empty{}); err != nil {
		t.Fatalf("retried Remove: %v, want the first answer (OK)", err)
	}
	tc.waitApplied(t)
	for _, n := range tc.nodes {
		if n == nil {
			continue
		}
		if v, err := n.fsm.Get("k"); err != nil || v.Incarnation != ps.Incarnation {
			t.Fatalf("%s after the retried Remove: %v %v, want B's %s", n.cfg.ID, v.Incarnation, err, ps.Incarnation)
		}
	}

	// A new, conditional Remove naming the removed incarnation changes
	// nothing; one naming B's removes it.
	err = tc.call(api.MethodRemove, &api.RemoveRequest{Key: "k", IfIncarnation: &first.Incarnation, Session: sess("client-a", 2)}, &api.Empty{})
	if api.CodeOf(err) != api.CodeIncarnationMismatch {
		t.Fatalf("Remove if-incarnation %s of a key holding %s: %v, want INCARNATION_MISMATCH", first.Incarnation, ps.Incarnation, err)
	}
	if got, err := tc.get("k"); err != nil || got.Incarnation != ps.Incarnation {
		t.Fatalf("after a mismatched conditional remove: %v %v", got, err)
	}
	var br api.BatchRemoveResponse
	err = tc.call(api.MethodBatchRemove, &api.BatchRemoveRequest{Keys: []string{"k", "nope"},
		IfIncarnations: []api.ObjectIncarnation{ps.Incarnation, {}}, Session: sess("client-a", 3)}, &br)
	if err != nil || br.Results[0].Err != nil || api.CodeOf(br.Results[1].Err) != api.CodeObjectNotFound {
		t.Fatalf("conditional BatchRemove: %+v %v", br.Results, err)
	}
	if _, err := tc.get("k"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("after the matching conditional remove: %v", err)
	}
}

// TestGroupCommitAnswersEachRequestItsOwnResults: concurrent Removes of
// many clients, each sent twice, are merged by the batcher into shared
// entries; every client gets exactly its own keys' results, a repeat the
// same answer as the first, and nothing runs twice.
func TestGroupCommitAnswersEachRequestItsOwnResults(t *testing.T) {
	tc := startCluster(t, 1)
	tc.mountHolder(t, "seg-a", "")
	const clients = 16
	for c := 0; c < clients; c++ {
		tc.put(t, fmt.Sprintf("c%d-x", c), 1, 1)
	}
	n := tc.waitLeader(t)
	var wg sync.WaitGroup
	answers := make([][2][]api.KeyResult, clients)
	errs := make(chan error, 2*clients)
	for c := 0; c < clients; c++ {
		for try := 0; try < 2; try++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				keys := []string{fmt.Sprintf("c%d-x", c), fmt.Sprintf("c%d-missing", c)}
				res, err := n.removes.remove(keys, nil, sess(fmt.Sprintf("client-%d", c), 1))
				if err != nil {
					errs <- err
					return
				}
				answers[c][try] = res
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for c := 0; c < clients; c++ {
		for try := 0; try < 2; try++ {
			r := answers[c][try]
			if len(r) != 2 || r[0].Key != fmt.Sprintf("c%d-x", c) || r[0].Err != nil || api.CodeOf(r[1].Err) != api.CodeObjectNotFound {
				t.Fatalf("client %d attempt %d answered %+v", c, try, r)
			}
		}
	}
	if st := n.fsm.Stats(); st.PendingTasks != clients {
		t.Fatalf("%d tasks for %d removed objects: a repeat ran twice", st.PendingTasks, clients)
	}
}

// TestRetriedPutStartReturnsTheFirstAnswer: a PutStart repeated with the
// same session, on the same leader, after a leader change, and when
// placement would now choose differently or fail, answers the first
// incarnation and replicas with grants that verify, starts nothing new,
// and the put completes (the key is not wedged).
func TestRetriedPutStartReturnsTheFirstAnswer(t *testing.T) {
	tc := startCluster(t, 3)
	a := tc.mountHolder(t, "seg-a", "")
	gk := mountGrantKey(t, a)
	req := &api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-a", 1)}
	first, err := tc.putStart(req)
	if err != nil {
		t.Fatal(err)
	}
	tc.mountHolder(t, "seg-b", "")
	segsOf := func(ps *api.PutStartResponse) []api.SegmentID {
		var out []api.SegmentID
		for _, r := range ps.Replicas {
			out = append(out, r.Segment)
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		again, err := tc.putStart(req)
		if err != nil {
			t.Fatalf("repeat %s: %v", when, err)
		}
		if again.Incarnation != first.Incarnation || !reflect.DeepEqual(segsOf(again), segsOf(first)) {
			t.Fatalf("repeat %s answered %s on %v, first answer %s on %v", when, again.Incarnation, segsOf(again), first.Incarnation, segsOf(first))
		}
		for _, r := range again.Replicas {
			if err := grant.Verify(gk, r.Grant, r.Segment, "k", first.Incarnation, 1, time.Now()); err != nil {
				t.Fatalf("repeat %s: grant refused: %v", when, err)
			}
		}
	}
	for i := 0; i < 5; i++ {
		check("on the same leader")
	}
	tc.kill(tc.leaderIndex(t))
	tc.waitLeader(t)
	check("after a leader change")
	if st := tc.waitLeader(t).fsm.Stats(); st.PendingPuts != 1 {
		t.Fatalf("%d pending puts after repeats, want 1", st.PendingPuts)
	}

	end := &api.PutEndRequest{Key: "k", Incarnation: first.Incarnation, Session: sess("client-a", 2)}
	for i := 0; i < 2; i++ {
		if err := tc.call(api.MethodPutEnd, end, &api.Empty{}); err != nil {
			t.Fatalf("PutEnd attempt %d: %v", i, err)
		}
	}
	if got, err := tc.get("k"); err != nil || got.Incarnation != first.Incarnation {
		t.Fatalf("get after the put: %v %v", got, err)
	}
	if _, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-a", 3)}); err != nil {
		t.Fatalf("the next put of the key: %v", err)
	}
}

// TestRetriedPutStartWhenPlacementNowFails: the only holder goes away
// after a PutStart executed; its repeat cannot be placed, yet answers the
// first result instead of a placement error.
func TestRetriedPutStartWhenPlacementNowFails(t *testing.T) {
	tc := startCluster(t, 1)
	a := tc.mountHolder(t, "seg-a", "")
	req := &api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-a", 1)}
	first, err := tc.putStart(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.link().Unmount(context.Background(), &api.UnmountLocalDiskRequest{Segment: a.Seg, MountEpoch: a.Epoch}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.putStart(&api.PutStartRequest{Key: "other", Size: 1, ReplicaNum: 1}); err == nil {
		t.Fatal("a new put was placed with no holder mounted")
	}
	again, err := tc.putStart(req)
	if err != nil {
		t.Fatalf("repeat with no holder to place on: %v, want the first answer", err)
	}
	if again.Incarnation != first.Incarnation || len(again.Replicas) != 1 || again.Replicas[0].Segment != a.Seg {
		t.Fatalf("repeat answered %+v, first %+v", again, first)
	}
	// A new request that cannot be placed still says why.
	_, err = tc.putStart(&api.PutStartRequest{Key: "k2", Size: 1, ReplicaNum: 1, Session: sess("client-a", 2)})
	if err == nil || api.CodeOf(err) == api.CodeInvalidParams {
		t.Fatalf("sessioned put with no holder: %v, want the placement error", err)
	}
}

// TestRetriedBatchPutStartLinesUpWithTheRequest: a sessioned BatchPutStart
// with an invalid key, an item that cannot be placed and two that can is
// repeated, also after every holder went away: each repeat answers every
// item exactly as the first answer did.
func TestRetriedBatchPutStartLinesUpWithTheRequest(t *testing.T) {
	tc := startCluster(t, 1)
	a := tc.mountHolder(t, "seg-a", "")
	req := &api.BatchPutStartRequest{Session: sess("client-a", 1), Items: []api.PutStartRequest{
		{Key: "", Size: 1},
		{Key: "p1", Size: 1, ReplicaNum: 1},
		{Key: "nowhere", Size: 1, ReplicaNum: 1, Pool: "no-such-pool"},
		{Key: "p2", Size: 1, ReplicaNum: 1},
	}}
	call := func() *api.BatchPutStartResponse {
		t.Helper()
		var resp api.BatchPutStartResponse
		if err := tc.call(api.MethodBatchPutStart, req, &resp); err != nil {
			t.Fatal(err)
		}
		return &resp
	}
	summary := func(r *api.BatchPutStartResponse) []string {
		var out []string
		for _, it := range r.Results {
			if it.Err != nil {
				out = append(out, string(it.Err.Code))
				continue
			}
			out = append(out, fmt.Sprintf("%s@%s", it.Incarnation, it.Replicas[0].Segment))
		}
		return out
	}
	first := summary(call())
	if first[0] != string(api.CodeInvalidKey) || first[2] != string(api.CodeNoSpace) || !strings.Contains(first[1], "@seg-a") || !strings.Contains(first[3], "@seg-a") {
		t.Fatalf("first answer %v", first)
	}
	if again := summary(call()); !reflect.DeepEqual(again, first) {
		t.Fatalf("repeat answered %v, first %v", again, first)
	}
	if err := tc.link().Unmount(context.Background(), &api.UnmountLocalDiskRequest{Segment: a.Seg, MountEpoch: a.Epoch}); err != nil {
		t.Fatal(err)
	}
	if again := summary(call()); !reflect.DeepEqual(again, first) {
		t.Fatalf("repeat with nothing to place on answered %v, first %v", again, first)
	}
	if st := tc.waitLeader(t).fsm.Stats(); st.PendingPuts != 2 {
		t.Fatalf("%d pending puts after repeats, want 2", st.PendingPuts)
	}
}

// TestRetriedSettingsSetAnswersTheFirstResult: a repeated SettingsSet
// answers the settings its first execution produced, even after another
// client changed them since, and changes nothing.
func TestRetriedSettingsSetAnswersTheFirstResult(t *testing.T) {
	tc := startCluster(t, 1)
	set := func(s api.Settings, ss api.Session) api.Settings {
		t.Helper()
		var resp api.SettingsResponse
		if err := tc.call(api.MethodSettingsSet, &api.SettingsSetRequest{Settings: s, Session: ss}, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.Settings
	}
	first := set(api.Settings{RegistryCapacity: 100}, sess("op-a", 1))
	set(api.Settings{RegistryCapacity: 200}, sess("op-b", 1))
	if again := set(api.Settings{RegistryCapacity: 100}, sess("op-a", 1)); again != first {
		t.Fatalf("repeat answered %+v, first %+v", again, first)
	}
	if s, _ := tc.waitLeader(t).fsm.Settings(); s.RegistryCapacity != 200 {
		t.Fatalf("a repeat changed the registry capacity back to %d", s.RegistryCapacity)
	}
}

// TestRetriedPutEndsAndRevokesAnswerTheFirstResult: a repeated PutRevoke
// and a repeated BatchPutEnd answer as their first execution did, where
// executing them again would fail (the put is no longer pending).
func TestRetriedPutEndsAndRevokesAnswerTheFirstResult(t *testing.T) {
	tc := startCluster(t, 1)
	tc.mountHolder(t, "seg-a", "")
	var bs api.BatchPutStartResponse
	if err := tc.call(api.MethodBatchPutStart, &api.BatchPutStartRequest{Items: []api.PutStartRequest{
		{Key: "a", Size: 1, ReplicaNum: 1}, {Key: "b", Size: 1, ReplicaNum: 1}, {Key: "r", Size: 1, ReplicaNum: 1},
	}, Session: sess("client-a", 1)}, &bs); err != nil {
		t.Fatal(err)
	}
	revoke := &api.PutRevokeRequest{Key: "r", Incarnation: bs.Results[2].Incarnation, Session: sess("client-a", 2)}
	end := &api.BatchPutEndRequest{Items: []api.PutEndRequest{
		{Key: "a", Incarnation: bs.Results[0].Incarnation}, {Key: "b", Incarnation: bs.Results[1].Incarnation},
	}, Session: sess("client-a", 3)}
	for try := 0; try < 2; try++ {
		if err := tc.call(api.MethodPutRevoke, revoke, &api.Empty{}); err != nil {
			t.Fatalf("PutRevoke attempt %d: %v", try, err)
		}
		var be api.BatchPutEndResponse
		if err := tc.call(api.MethodBatchPutEnd, end, &be); err != nil {
			t.Fatal(err)
		}
		for _, r := range be.Results {
			if r.Err != nil {
				t.Fatalf("BatchPutEnd attempt %d: %s: %v", try, r.Key, r.Err)
			}
		}
	}
	// Without a session the same requests are executed again and fail.
	revoke.Session, end.Session = api.Session{}, api.Session{}
	if err := tc.call(api.MethodPutRevoke, revoke, &api.Empty{}); err == nil {
		t.Fatal("an unsessioned second revoke of the same put succeeded; the check above proves nothing")
	}
}

// TestRetriedPutStartAfterRevokeGetsNoGrants: a sessioned PutStart (and a
// BatchPutStart) is abandoned and the leader's discard revokes it; the
// client's repeat is answered OBJECT_NOT_FOUND with no incarnation and no
// write grant, instead of fresh grants for an incarnation whose delete
// tasks may already have tombstoned it.
func TestRetriedPutStartAfterRevokeGetsNoGrants(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) { c.DiscardTimeout = 100 * time.Millisecond })
	tc.mountHolder(t, "seg-a", "")
	req := &api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-a", 1)}
	first, err := tc.putStart(req)
	if err != nil {
		t.Fatal(err)
	}
	batch := &api.BatchPutStartRequest{Session: sess("client-a", 2), Items: []api.PutStartRequest{{Key: "b", Size: 1, ReplicaNum: 1}}}
	var bs api.BatchPutStartResponse
	if err := tc.call(api.MethodBatchPutStart, batch, &bs); err != nil || bs.Results[0].Err != nil {
		t.Fatalf("batch put start: %v %+v", err, bs.Results)
	}
	leader := tc.waitLeader(t)
	testutil.WaitFor(t, harnessTimeout, func() bool {
		return leader.fsm.Stats().PendingPuts == 0
	}, "the leader to discard both abandoned puts")
	for _, key := range []string{"k", "b"} {
		if len(leader.fsm.TasksOfKey(key)) == 0 {
			t.Fatalf("the revoke of %q queued no delete task for its replica", key)
		}
	}

	again, err := tc.putStart(req)
	if api.CodeOf(err) != api.CodeObjectNotFound || again != nil {
		t.Fatalf("repeat of PutStart %s after its revoke: %+v %v, want OBJECT_NOT_FOUND and no grants", first.Incarnation, again, err)
	}
	if !strings.Contains(err.Error(), "revoked") || !strings.Contains(err.Error(), "start the put again") {
		t.Fatalf("the refusal does not say the put was revoked and must be started again: %v", err)
	}
	var rb api.BatchPutStartResponse
	if err := tc.call(api.MethodBatchPutStart, batch, &rb); err != nil {
		t.Fatal(err)
	}
	if r := rb.Results[0]; api.CodeOf(r.Err) != api.CodeObjectNotFound || len(r.Replicas) != 0 {
		t.Fatalf("repeat of BatchPutStart after its revoke answered %+v, want OBJECT_NOT_FOUND and no grants", r)
	}
	if st := leader.fsm.Stats(); st.PendingPuts != 0 {
		t.Fatalf("%d puts pending after the repeats: a repeat started one", st.PendingPuts)
	}
	// A new request puts the key.
	if _, err := tc.putStart(&api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-a", 3)}); err != nil {
		t.Fatalf("a new put of the key: %v", err)
	}
}

// TestRetriedPutStartFirstAnsweredNoSpace: a sessioned PutStart (and a
// BatchPutStart item) that could not be placed is answered NO_SPACE; its
// repeat, after a holder has mounted so placement would now succeed, gets
// the same answer and starts nothing.
func TestRetriedPutStartFirstAnsweredNoSpace(t *testing.T) {
	tc := startCluster(t, 1)
	req := &api.PutStartRequest{Key: "k", Size: 1, ReplicaNum: 1, Session: sess("client-a", 1)}
	_, first := tc.putStart(req)
	if api.CodeOf(first) != api.CodeNoSpace {
		t.Fatalf("PutStart with no holder: %v, want NO_SPACE", first)
	}
	batch := &api.BatchPutStartRequest{Session: sess("client-a", 2), Items: []api.PutStartRequest{{Key: "b", Size: 1, ReplicaNum: 1}}}
	var fb api.BatchPutStartResponse
	if err := tc.call(api.MethodBatchPutStart, batch, &fb); err != nil {
		t.Fatal(err)
	}
	if api.CodeOf(fb.Results[0].Err) != api.CodeNoSpace {
		t.Fatalf("BatchPutStart item with no holder: %+v, want NO_SPACE", fb.Results[0])
	}
	tc.mountHolder(t, "seg-a", "")
	if _, err := tc.putStart(&api.PutStartRequest{Key: "probe", Size: 1, ReplicaNum: 1}); err != nil {
		t.Fatalf("a new put once the holder is mounted: %v", err)
	}
	for i := 0; i < 2; i++ {
		again, err := tc.putStart(req)
		if again != nil || err == nil || err.Error() != first.Error() {
			t.Fatalf("repeat %d answered %+v %v, first answer %v", i, again, err, first)
		}
		var rb api.BatchPutStartResponse
		if err := tc.call(api.MethodBatchPutStart, batch, &rb); err != nil {
			t.Fatal(err)
		}
		if r := rb.Results[0]; r.Err == nil || r.Err.Error() != fb.Results[0].Err.Error() || len(r.Replicas) != 0 {
			t.Fatalf("batch repeat %d answered %+v, first answer %+v", i, r, fb.Results[0])
		}
	}
	if st := tc.waitLeader(t).fsm.Stats(); st.PendingPuts != 1 {
		t.Fatalf("%d puts pending, want only the probe's: a repeat started a put", st.PendingPuts)
	}
}
