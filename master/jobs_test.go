package master

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsm"
	"sexton/internal/testutil"
)

// TestPrefixDeleteJobSurvivesLeaderKill: a prefix delete over many more
// keys than the registry holds pauses while the registry is full (no
// holder acks yet), resumes when acks free room, survives the leader's
// crash midway (the next leader carries on from the replicated cursor),
// and finishes with every old key gone; keys put after it started, and
// keys outside the prefix, stay. A client Remove during the job succeeds:
// the job leaves the registry's reserve to clients.
func TestPrefixDeleteJobSurvivesLeaderKill(t *testing.T) {
	tc := startCluster(t, 3)
	h := tc.mountHolder(t, "seg-a", "")
	const capacity, nKeys = 300, 3000
	tc.setSettings(t, api.Settings{RegistryCapacity: capacity})
	var keys, outside []string
	for i := range nKeys {
		keys = append(keys, fmt.Sprintf("bulk/%05d", i))
	}
	for i := range 10 {
		outside = append(outside, fmt.Sprintf("keep/%02d", i))
	}
	tc.fill(t, keys)
	tc.fill(t, outside)

	if _, err := tc.startJob("", false); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("an empty prefix without all: %v, want INVALID_PARAMS", err)
	}
	job, err := tc.startJob("bulk/", false)
	if err != nil {
		t.Fatal(err)
	}
	// Put after the start: a new key and an overwrite of an old one.
	tc.fill(t, []string{"bulk/new-after-start"})
	tc.fill(t, keys[nKeys-1:], true)

	// No holder acks yet: the job fills the registry up to the reserve and
	// pauses, visibly.
	jobNow := func() api.JobInfo {
		var resp api.JobListResponse
		for attempt := 0; ; attempt++ {
			err := tc.call(api.MethodJobList, &api.Empty{}, &resp)
			if err == nil {
				break
			}
			if attempt == 20 {
				t.Fatalf("jobs: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, j := range resp.Jobs {
			if j.ID == job.ID {
				return j
			}
		}
		t.Fatalf("job %d not listed", job.ID)
		return api.JobInfo{}
	}
	testutil.WaitFor(t, 20*time.Second, func() bool { return jobNow().State == api.JobPausedRegistryFull }, "job paused with a full registry")
	st := tc.waitLeader(t).fsm.Stats()
	// +1: the overwrite above queued its old copy's task, maybe after the
	// job had filled its share.
	if st.PendingTasks > capacity-fsm.JobRegistryReserve(capacity)+1 {
		t.Fatalf("job filled %d of %d slots, past the clients' reserve", st.PendingTasks, capacity)
	}
	// A client's Remove still finds room.
	for {
		err := tc.call(api.MethodRemove, &api.KeyRequest{Key: outside[0]}, nil)
		if err == nil || api.CodeOf(err) == api.CodeObjectNotFound {
			break // not found: an earlier try whose answer was lost removed it
		}
		if code := api.CodeOf(err); code != api.CodeOutcomeUnknown && code != api.CodeNotLeader && code != api.CodeUnavailable {
			t.Fatalf("client remove during the job: %v", err)
		}
	}

	h.follow(t, ackAll(api.AckRemoved))
	testutil.WaitFor(t, 30*time.Second, func() bool { return jobNow().Removed > nKeys/3 }, "job past a third of the keys")
	before := jobNow()
	tc.kill(tc.leaderIndex(t))
	testutil.WaitFor(t, 60*time.Second, func() bool { return jobNow().State == api.JobDone }, "job done after the leader's crash")
	done := jobNow()
	if done.Removed != nKeys-1 || done.Removed <= before.Removed {
		t.Fatalf("job removed %d (had %d at the crash), want %d", done.Removed, before.Removed, nKeys-1)
	}
	for _, k := range []string{keys[0], keys[nKeys/2], keys[nKeys-2]} {
		if _, err := tc.get(k); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("get %s after the job: %v, want OBJECT_NOT_FOUND", k, err)
		}
	}
	for _, k := range append([]string{"bulk/new-after-start", keys[nKeys-1]}, outside[1:]...) {
		if _, err := tc.get(k); err != nil {
			t.Fatalf("get %s (put after the start, or outside the prefix): %v", k, err)
		}
	}
	// Cancelling a finished job changes nothing.
	if j, err := tc.cancelJob(job.ID); err != nil || j.State != api.JobDone {
		t.Fatalf("cancel of a done job: %+v %v", j, err)
	}
}

// TestPrefixDeleteJobCancel: a cancelled job stops; the keys it had not
// reached stay.
func TestPrefixDeleteJobCancel(t *testing.T) {
	tc := startCluster(t, 1)
	tc.mountHolder(t, "seg-a", "")
	tc.setSettings(t, api.Settings{RegistryCapacity: 100})
	var keys []string
	for i := range 500 {
		keys = append(keys, fmt.Sprintf("c/%04d", i))
	}
	tc.fill(t, keys)
	job, err := tc.startJob("c/", false)
	if err != nil {
		t.Fatal(err)
	}
	// Nobody acks: the job stalls after the registry's first 90 slots.
	tc.waitJobState(t, job.ID, api.JobPausedRegistryFull)
	j, err := tc.cancelJob(job.ID)
	if err != nil || j.State != api.JobCancelled {
		t.Fatalf("cancel: %+v %v", j, err)
	}
	if _, err := tc.get(keys[len(keys)-1]); err != nil {
		t.Fatalf("a key the cancelled job had not reached: %v", err)
	}
	if j.Removed != 90 {
		t.Fatalf("job removed %d before the cancel, want the 90 slots above the reserve", j.Removed)
	}
	// Every key (rm --all) is the prefix "" with all set.
	all, err := tc.startJob("", true)
	if err != nil || all.Prefix != "" || all.ID <= job.ID || !all.Active() {
		t.Fatalf("start of a job over every key: %+v %v", all, err)
	}
	if j, err := tc.cancelJob(all.ID); err != nil || j.State != api.JobCancelled {
		t.Fatalf("cancel: %+v %v", j, err)
	}
}

// TestPrefixDeleteKeepsAPutAcknowledgedAfterItsStart: puts started before
// the job (a new key and an overwrite of a key under the prefix) and
// acknowledged after it, while the leader drives the job (paused at the
// registry's reserve, its cursor before them), survive it; every key
// complete at the start goes.
func TestPrefixDeleteKeepsAPutAcknowledgedAfterItsStart(t *testing.T) {
	tc := startCluster(t, 1)
	h := tc.mountHolder(t, "seg-a", "")
	tc.setSettings(t, api.Settings{RegistryCapacity: 100})
	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("race/%04d", i))
	}
	tc.fill(t, keys)
	newKey, overwritten := "race/zzz", keys[len(keys)-1]
	var started []*api.PutStartResponse
	for _, k := range []string{newKey, overwritten} {
		ps, err := tc.putStart(&api.PutStartRequest{Key: k, Size: 10, ReplicaNum: 1})
		if err != nil {
			t.Fatalf("PutStart %s: %v", k, err)
		}
		started = append(started, ps)
	}
	job, err := tc.startJob("race/", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range started {
		if !ps.Incarnation.Less(job.Start) {
			t.Fatalf("put %s is not older than the job's start %s", ps.Incarnation, job.Start)
		}
	}
	// The leader has scanned and removed up to the reserve; the puts'
	// keys lie after its cursor.
	tc.waitJobState(t, job.ID, api.JobPausedRegistryFull)
	for i, k := range []string{newKey, overwritten} {
		if err := tc.call(api.MethodPutEnd, &api.PutEndRequest{Key: k, Incarnation: started[i].Incarnation}, &api.Empty{}); err != nil {
			t.Fatalf("PutEnd %s: %v", k, err)
		}
	}
	h.follow(t, ackAll(api.AckRemoved))
	testutil.WaitFor(t, 30*time.Second, func() bool {
		j, _ := tc.waitLeader(t).fsm.Job(job.ID)
		return j.State == api.JobDone
	}, "job done")
	for i, k := range []string{newKey, overwritten} {
		o, err := tc.get(k)
		if err != nil || o.Incarnation != started[i].Incarnation {
			t.Fatalf("get %s after the job: %+v %v, want the put acknowledged after its start (%s)", k, o, err, started[i].Incarnation)
		}
	}
	for _, k := range keys[:len(keys)-1] {
		if _, err := tc.get(k); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("get %s after the job: %v, want OBJECT_NOT_FOUND", k, err)
		}
	}
	if j, _ := tc.waitLeader(t).fsm.Job(job.ID); j.Removed != int64(len(keys)-1) {
		t.Fatalf("job removed %d, want %d", j.Removed, len(keys)-1)
	}
}

// TestPrefixDeleteLeavesTheReserveWithReplicatedKeys: with three-replica
// keys the job fills the registry only up to the clients' reserve,
// counted in task slots, and a client's Remove of a three-replica key
// succeeds while the job is paused.
func TestPrefixDeleteLeavesTheReserveWithReplicatedKeys(t *testing.T) {
	tc := startCluster(t, 1)
	for _, s := range []string{"seg-a", "seg-b", "seg-c"} {
		tc.mountHolder(t, s, "")
	}
	const capacity = 30
	tc.setSettings(t, api.Settings{RegistryCapacity: capacity})
	for i := range 20 {
		tc.put(t, fmt.Sprintf("rep/%02d", i), 10, 3)
	}
	tc.put(t, "other", 10, 3)
	job, err := tc.startJob("rep/", false)
	if err != nil {
		t.Fatal(err)
	}
	tc.waitJobState(t, job.ID, api.JobPausedRegistryFull)
	st := tc.waitLeader(t).fsm.Stats()
	if limit := capacity - fsm.JobRegistryReserve(capacity); st.PendingTasks > limit {
		t.Fatalf("job filled %d of %d slots, past the clients' reserve (%d)", st.PendingTasks, capacity, limit)
	}
	if err := tc.remove("other"); err != nil {
		t.Fatalf("client remove of a three-replica key during the job: %v", err)
	}
	if j, _ := tc.waitLeader(t).fsm.Job(job.ID); j.Removed != 9 {
		t.Fatalf("job removed %d keys, want the 9 whose 27 tasks fit above the reserve", j.Removed)
	}
}

// jobSeq numbers the job requests of the tests' session, so a request
// retried after a lost answer (this machine is loaded: leadership does
// move) is answered once, as a client library would.
var jobSeq atomic.Uint64

// callRetry calls method with the session's next seq, retrying the same
// request while the outcome is unknown or no leader answers.
func (tc *testCluster) callRetry(method string, req any, setSession func(api.Session), resp any) error {
	setSession(api.Session{ClientID: "jobs-test", Seq: jobSeq.Add(1)})
	for attempt := 0; ; attempt++ {
		err := tc.call(method, req, resp)
		switch api.CodeOf(err) {
		case api.CodeOutcomeUnknown, api.CodeNotLeader, api.CodeUnavailable, api.CodeTimeout:
			if attempt < 20 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		return err
	}
}

// waitJobState waits until the leader's fsm has job id in state.
func (tc *testCluster) waitJobState(t *testing.T, id uint64, state string) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() bool {
		j, _ := tc.waitLeader(t).fsm.Job(id)
		return j.State == state
	}, fmt.Sprintf("job %d %s", id, state))
}

func (tc *testCluster) startJob(prefix string, all bool) (api.JobInfo, error) {
	req := &api.JobStartRequest{Prefix: prefix, All: all}
	var resp api.JobStartResponse
	err := tc.callRetry(api.MethodJobStart, req, func(s api.Session) { req.Session = s }, &resp)
	return resp.Job, err
}

func (tc *testCluster) cancelJob(id uint64) (api.JobInfo, error) {
	req := &api.JobCancelRequest{ID: id}
	var resp api.JobCancelResponse
	err := tc.callRetry(api.MethodJobCancel, req, func(s api.Session) { req.Session = s }, &resp)
	return resp.Job, err
}

// fill makes every key COMPLETE (one LOCAL_DISK replica each), or, with
// overwrite, a new incarnation of every key. Unlike putMany it rides out a
// leadership change in the middle (this machine is shared and loaded): a
// batch whose outcome is unknown is finished from what the leader's state
// shows — keys still absent are put again, puts left pending are ended.
func (tc *testCluster) fill(t testing.TB, keys []string, overwrite ...bool) {
	t.Helper()
	before := map[string]api.ObjectIncarnation{}
	for _, k := range keys {
		if o, err := tc.waitLeader(t).fsm.Get(k); err == nil {
			before[k] = o.Incarnation
		}
	}
	done := func(k string) bool {
		o, err := tc.waitLeader(t).fsm.Get(k)
		if err != nil {
			return false
		}
		old, had := before[k]
		return len(overwrite) == 0 || !had || o.Incarnation != old
	}
	for attempt := 0; attempt < 10; attempt++ {
		var todo []string
		ended := false
		for _, k := range keys {
			if done(k) {
				continue
			}
			if _, pending, _, _ := tc.waitLeader(t).fsm.Stat(k); pending != nil {
				_ = tc.call(api.MethodPutEnd, &api.PutEndRequest{Key: k, Incarnation: *pending}, nil)
				ended = true
				continue
			}
			todo = append(todo, k)
		}
		if len(todo) == 0 && !ended {
			return
		}
		for start := 0; start < len(todo); start += api.MaxBatchPutItems {
			chunk := todo[start:min(start+api.MaxBatchPutItems, len(todo))]
			starts := &api.BatchPutStartRequest{}
			for _, k := range chunk {
				starts.Items = append(starts.Items, api.PutStartRequest{Key: k, Size: 10, ReplicaNum: 1})
			}
			var sr api.BatchPutStartResponse
			if err := tc.call(api.MethodBatchPutStart, starts, &sr); err != nil {
				continue
			}
			ends := &api.BatchPutEndRequest{}
			for i, r := range sr.Results {
				if r.Err == nil {
					ends.Items = append(ends.Items, api.PutEndRequest{Key: chunk[i], Incarnation: r.Incarnation})
				}
			}
			_ = tc.call(api.MethodBatchPutEnd, ends, &api.BatchPutEndResponse{})
		}
	}
	for _, k := range keys {
		if !done(k) {
			t.Fatalf("fill: %s not put after 10 attempts", k)
		}
	}
}

// TestJobScanTakeCountsTaskSlots: a step takes keys while their task
// slots fit the room, at most n of them, and says when the scan cannot
// tell what follows.
func TestJobScanTakeCountsTaskSlots(t *testing.T) {
	c := func(k string, tasks int) fsm.JobCandidate { return fsm.JobCandidate{Key: k, Tasks: tasks} }
	s := &jobScan{keys: []fsm.JobCandidate{c("a", 3), c("b", 3), c("c", 1), c("d", 3)}, last: true}
	for _, tc := range []struct {
		cursor   string
		n, room  int
		want     string
		last, ok bool
	}{
		{"", 10, 6, "a,b", false, true},     // 6 slots: a and b
		{"", 10, 7, "a,b,c", false, true},   // 7 slots: a, b and c
		{"", 10, 2, "", false, true},        // a needs 3: nothing fits
		{"", 2, 100, "a,b", false, true},    // at most n keys
		{"b", 10, 4, "c,d", true, true},     // after the cursor, to the end
		{"d", 10, 4, "", true, true},        // nothing after the last key
		{"", 10, 10, "a,b,c,d", true, true}, // all of them, exactly
		{"a", 10, 100, "b,c,d", true, true}, // the scan was the last
	} {
		keys, last, ok := s.take(tc.cursor, tc.n, tc.room)
		if got := strings.Join(keys, ","); got != tc.want || last != tc.last || ok != tc.ok {
			t.Errorf("take(%q, %d, %d) = %q last=%v ok=%v, want %q last=%v ok=%v", tc.cursor, tc.n, tc.room, got, last, ok, tc.want, tc.last, tc.ok)
		}
	}
	// A scan that was not the last cannot say what follows its keys.
	s.last = false
	if keys, _, ok := s.take("b", 10, 100); ok || strings.Join(keys, ",") != "c,d" {
		t.Errorf("take past a partial scan: %v ok=%v, want c,d and not ok", keys, ok)
	}
}
