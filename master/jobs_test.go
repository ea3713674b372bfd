package master

import (
	"fmt"
	"testing"
	"time"

	"sexton/api"
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
	tc.putMany(t, keys, 10)
	tc.putMany(t, outside, 10)

	if _, err := tc.startJob("", false); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("an empty prefix without all: %v, want INVALID_PARAMS", err)
	}
	job, err := tc.startJob("bulk/", false)
	if err != nil {
		t.Fatal(err)
	}
	// Put after the start: a new key and an overwrite of an old one.
	tc.putMany(t, []string{"bulk/new-after-start", keys[nKeys-1]}, 20)

	// No holder acks yet: the job fills the registry up to the reserve and
	// pauses, visibly.
	jobNow := func() api.JobInfo {
		var resp api.JobListResponse
		if err := tc.call(api.MethodJobList, &api.Empty{}, &resp); err != nil {
			t.Fatalf("jobs: %v", err)
		}
		for _, j := range resp.Jobs {
			if j.ID == job.ID {
				return j
			}
		}
		t.Fatalf("job %d not listed", job.ID)
		return api.JobInfo{}
	}
	eventually(t, 20*time.Second, "job paused with a full registry", func() bool { return jobNow().State == api.JobPausedRegistryFull })
	st := tc.waitLeader(t).fsm.Stats()
	if st.PendingTasks > capacity-capacity/jobReserveFraction {
		t.Fatalf("job filled %d of %d slots, past the clients' reserve", st.PendingTasks, capacity)
	}
	// A client's Remove still finds room.
	tc.removeMany(t, outside[:1])

	h.follow(t, ackAll(api.AckRemoved))
	eventually(t, 30*time.Second, "job past a third of the keys", func() bool { return jobNow().Removed > nKeys/3 })
	before := jobNow()
	tc.kill(tc.leaderIndex(t))
	eventually(t, 60*time.Second, "job done after the leader's crash", func() bool { return jobNow().State == api.JobDone })
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
	tc.putMany(t, keys, 10)
	job, err := tc.startJob("c/", false)
	if err != nil {
		t.Fatal(err)
	}
	// Nobody acks: the job stalls after the registry's first 90 slots.
	eventually(t, 20*time.Second, "job paused", func() bool {
		j, _ := tc.waitLeader(t).fsm.Job(job.ID)
		return j.State == api.JobPausedRegistryFull
	})
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
}

func (tc *testCluster) startJob(prefix string, all bool) (api.JobInfo, error) {
	var resp api.JobStartResponse
	err := tc.call(api.MethodJobStart, &api.JobStartRequest{Prefix: prefix, All: all}, &resp)
	return resp.Job, err
}

func (tc *testCluster) cancelJob(id uint64) (api.JobInfo, error) {
	var resp api.JobCancelResponse
	err := tc.call(api.MethodJobCancel, &api.JobCancelRequest{ID: id}, &resp)
	return resp.Job, err
}
