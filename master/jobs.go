package master

import (
	"context"
	"slices"
	"strings"
	"time"

	"sexton/internal/ctxsleep"

	"sexton/api"
	"sexton/fsm"
)

// jobStepKeys is how many keys one job step carries at most: a step is one
// Raft entry applied on every node under the fsm's lock, so it stays small
// (~0.5 ms of Apply, a few tens of KB).
const jobStepKeys = 512

// jobIdle is how long the job duty sleeps when no job could advance.
const jobIdle = 100 * time.Millisecond

// jobScanKeys is how many candidate keys one JobCandidates call lists for
// a job: a few steps' worth. The call walks the fsm's ordered index from
// the job's cursor under the read lock (O(log objects + keys listed)), so
// a small batch keeps each hold of the lock short (Apply waits behind it)
// while saving a walk per step.
const jobScanKeys = 8 * jobStepKeys

// jobScan is the leader's list of a job's next keys, from one scan. It is
// soft state: a new leader (or this one after a restart of the duty)
// scans again from the replicated cursor.
type jobScan struct {
	keys []fsm.JobCandidate // in key order
	last bool               // no key after keys[len-1] was found
}

// take returns the keys of the scan after cursor that one step carries —
// at most n keys taking at most room task slots — and whether they are
// the job's last; ok is false when the scan cannot say (it ran out before
// either bound and was not the last), so a new scan is needed. No keys
// with ok and not last: the next key does not fit room.
func (s *jobScan) take(cursor string, n, room int) (keys []string, last, ok bool) {
	i, found := slices.BinarySearchFunc(s.keys, cursor, func(c fsm.JobCandidate, k string) int { return strings.Compare(c.Key, k) })
	if found {
		i++
	}
	rest := s.keys[i:]
	used := 0
	for _, c := range rest {
		if len(keys) == n || used+c.Tasks > room {
			return keys, false, true
		}
		keys = append(keys, c.Key)
		used += c.Tasks
	}
	return keys, s.last, s.last
}

// jobsLeader advances the bulk-delete jobs while this node leads. All of a
// job's progress is in the replicated state (its cursor), so a new leader
// simply carries on from it.
func (n *Node) jobsLeader(ctx context.Context) {
	scans := map[uint64]*jobScan{}
	for ctx.Err() == nil {
		if !n.advanceJobs(ctx, scans) && !ctxsleep.Sleep(ctx, jobIdle) {
			return
		}
	}
}

// jobRoom is how many more tasks a job step may create now: the registry's
// free slots above the clients' reserve (fsm.JobRegistryReserve, which
// Apply enforces).
func jobRoom(st fsm.Stats) int {
	return st.RegistryCapacity - st.PendingTasks - fsm.JobRegistryReserve(st.RegistryCapacity)
}

// advanceJobs proposes one step of every active job and reports whether
// any of them moved. A step carries keys whose removal takes at most the
// registry's room above the clients' reserve, counted in task slots (a
// key takes one per replica). A job is held back (and marked paused,
// visibly) while its next key does not fit; it resumes when acks free
// slots.
func (n *Node) advanceJobs(ctx context.Context, scans map[uint64]*jobScan) bool {
	moved := false
	jobs := n.fsm.Jobs()
	for id := range scans {
		if !slices.ContainsFunc(jobs, func(j api.JobInfo) bool { return j.ID == id && j.Active() }) {
			delete(scans, id)
		}
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			return moved
		}
		if !j.Active() {
			continue
		}
		room := jobRoom(n.fsm.Stats())
		var keys []string
		last, ok := false, false
		if room > 0 {
			if s := scans[j.ID]; s != nil {
				keys, last, ok = s.take(j.Cursor, jobStepKeys, room)
			}
			if !ok {
				cur, scanned, scannedLast, found := n.fsm.JobCandidates(j.ID, jobScanKeys)
				if !found || !cur.Active() {
					continue
				}
				j = cur
				s := &jobScan{keys: scanned, last: scannedLast}
				scans[j.ID] = s
				keys, last, _ = s.take(j.Cursor, jobStepKeys, room)
			}
		}
		if len(keys) == 0 && !last {
			// No room, or the next key takes more slots than there are.
			if j.State == api.JobRunning {
				_, err := proposeFor[fsm.JobAdvanceResult](n, &fsm.JobAdvance{V: fsm.JobAdvanceV1, Job: j.ID, After: j.Cursor, Pause: true})
				if err != nil {
					n.log.Warn("bulk-delete job: recording the pause failed", "job", j.ID, "error", err)
				} else {
					n.log.Info("bulk-delete job paused: the delete registry is full", "job", j.ID, "cursor", j.Cursor)
				}
			}
			continue
		}
		r, err := proposeFor[fsm.JobAdvanceResult](n, &fsm.JobAdvance{V: fsm.JobAdvanceV1, Job: j.ID, After: j.Cursor, Keys: keys, Last: last})
		if err != nil {
			n.log.Warn("bulk-delete job step failed; retrying", "job", j.ID, "error", err)
			return moved
		}
		if r.Stale {
			continue
		}
		if last && r.Job.Active() {
			// Apply found a key the job owns that the scan did not list
			// (jobHasMore): scan again rather than repeat the last step.
			delete(scans, j.ID)
		}
		moved = moved || r.Removed+r.Skipped > 0 || r.Job.State != j.State
		if r.Job.State == api.JobDone {
			n.log.Info("bulk-delete job done", "job", j.ID, "prefix", j.Prefix, "removed", r.Job.Removed, "skipped", r.Job.Skipped, "steps", r.Job.Steps)
		}
	}
	return moved
}

// handleJobStart starts a prefix delete. An empty prefix (every key) needs
// All, so a forgotten argument cannot wipe the cluster.
func (n *Node) handleJobStart(_ context.Context, req *api.JobStartRequest) (*api.JobStartResponse, error) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	if req.Prefix == "" && !req.All {
		return nil, api.Errorf(api.CodeInvalidParams, "an empty prefix deletes every key: set all to confirm")
	}
	if len(req.Prefix) > api.MaxKeyLen {
		return nil, api.Errorf(api.CodeInvalidKey, "prefix of %d bytes exceeds %d", len(req.Prefix), api.MaxKeyLen)
	}
	r, err := proposeFor[fsm.JobResult](n, &fsm.JobStart{V: fsm.JobStartV1, Prefix: req.Prefix, Session: req.Session})
	if err != nil {
		return nil, err
	}
	if !r.Duplicate {
		n.log.Info("bulk-delete job started", "job", r.Job.ID, "prefix", r.Job.Prefix)
	}
	return &api.JobStartResponse{Job: r.Job}, nil
}

// handleJobList answers the jobs the state keeps, read linearizably.
func (n *Node) handleJobList(_ context.Context, _ *api.Empty) (*api.JobListResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	return &api.JobListResponse{Jobs: n.fsm.Jobs(), Index: n.fsm.Stats().AppliedIndex}, nil
}

// handleJobCancel cancels an active job through the log.
func (n *Node) handleJobCancel(_ context.Context, req *api.JobCancelRequest) (*api.JobCancelResponse, error) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	r, err := proposeFor[fsm.JobResult](n, &fsm.JobCancel{V: fsm.JobCancelV1, Job: req.ID, Session: req.Session})
	if err != nil {
		return nil, err
	}
	if !r.Duplicate {
		n.log.Info("bulk-delete job cancel", "job", req.ID, "state", r.Job.State)
	}
	return &api.JobCancelResponse{Job: r.Job}, nil
}
