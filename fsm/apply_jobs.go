package fsm

import (
	"slices"
	"strings"

	"sexton/api"
)

// jobTable is the state's bulk-delete jobs, by id (= the index of the
// JobStart entry, so appending keeps the order). Small: at most
// MaxActiveJobs active and MaxFinishedJobs finished jobs.
type jobTable struct {
	jobs []*api.JobInfo
}

func (t *jobTable) find(id uint64) *api.JobInfo {
	i, ok := slices.BinarySearchFunc(t.jobs, id, func(j *api.JobInfo, id uint64) int { return cmpUint(j.ID, id) })
	if !ok {
		return nil
	}
	return t.jobs[i]
}

func (t *jobTable) active() int {
	n := 0
	for _, j := range t.jobs {
		if j.Active() {
			n++
		}
	}
	return n
}

// pruneFinished drops the oldest finished jobs beyond MaxFinishedJobs.
func (t *jobTable) pruneFinished() {
	finished := len(t.jobs) - t.active()
	for i := 0; finished > MaxFinishedJobs && i < len(t.jobs); {
		if t.jobs[i].Active() {
			i++
			continue
		}
		t.jobs = slices.Delete(t.jobs, i, i+1)
		finished--
	}
}

// applyJobStart records a new prefix-delete job. Its start incarnation is
// the one a PutStart at this entry would get: every key whose COMPLETE
// incarnation is at most that was put before the job and is the job's to
// remove.
func (st *state) applyJobStart(index uint64, c *JobStart) *JobResult {
	if n := st.jobs.active(); n >= MaxActiveJobs {
		return &JobResult{Err: api.Errorf(api.CodeUnavailable, "%d bulk-delete jobs are active, at most %d; cancel one or wait", n, MaxActiveJobs)}
	}
	j := &api.JobInfo{
		ID: index, Kind: api.JobKindPrefixDelete, Prefix: strings.Clone(c.Prefix),
		Start: st.incarnationAt(index),
		State: api.JobRunning, Created: c.Now, Updated: c.Now,
	}
	st.jobs.jobs = append(st.jobs.jobs, j)
	return &JobResult{Job: *j}
}

// applyJobStartSessioned is applyJobStart answered once per session: the
// stored answer is the job's start incarnation, whose Low is its id.
func (st *state) applyJobStartSessioned(index uint64, c *JobStart) *JobResult {
	g := st.sessionBegin(CmdJobStart, c.Session, c.Now)
	if g.prev != nil {
		out := &JobResult{Err: g.prev.err, Duplicate: true}
		if g.prev.err == nil {
			out.Job = st.jobInfo(g.prev.inc.Low)
		}
		return out
	}
	if g.err != nil {
		return &JobResult{Err: g.err, Duplicate: g.dup}
	}
	res := st.applyJobStart(index, c)
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		r := sessResult{kind: CmdJobStart, err: res.Err}
		if res.Err == nil {
			r.inc = res.Job.Start
		}
		st.sessionEnd(&g, r)
	}
	return res
}

// jobInfo is a copy of job id, or a record naming only the id when the job
// was dropped from the finished list.
func (st *state) jobInfo(id uint64) api.JobInfo {
	if j := st.jobs.find(id); j != nil {
		return *j
	}
	return api.JobInfo{ID: id, Kind: api.JobKindPrefixDelete}
}

func unknownJob(id uint64) *api.Error {
	return api.Errorf(api.CodeInvalidParams, "no bulk-delete job %d", id)
}

// applyJobCancel stops an active job. Cancelling a finished job changes
// nothing and answers the job as it is.
func (st *state) applyJobCancel(c *JobCancel) *JobResult {
	j := st.jobs.find(c.Job)
	if j == nil {
		return &JobResult{Err: unknownJob(c.Job)}
	}
	if j.Active() {
		j.State, j.Updated = api.JobCancelled, c.Now
		st.jobs.pruneFinished()
	}
	return &JobResult{Job: *j}
}

func (st *state) applyJobCancelSessioned(c *JobCancel) *JobResult {
	g := st.sessionBegin(CmdJobCancel, c.Session, c.Now)
	if g.prev != nil {
		return &JobResult{Err: g.prev.err, Job: st.jobInfo(c.Job), Duplicate: true}
	}
	if g.err != nil {
		return &JobResult{Err: g.err, Duplicate: g.dup}
	}
	res := st.applyJobCancel(c)
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		st.sessionEnd(&g, sessResult{kind: CmdJobCancel, err: res.Err})
	}
	return res
}

// applyJobAdvance is one step of a job. A step for a job that is not
// active, or whose cursor is not the one the step expects, is stale and
// changes nothing: a retried or duplicated step, or one from a deposed
// leader, is harmless. Keys must be under the prefix, after the cursor and
// strictly increasing (the leader lists them so); otherwise the step is
// refused whole.
//
// Each key whose COMPLETE incarnation is at most the job's start is
// removed exactly as Remove removes it (tasks reserved first). The first
// key that does not fit the registry pauses the job and ends the step:
// the cursor stays before it, so the key is neither skipped nor failed —
// the next step retries it. A key with no COMPLETE incarnation under the
// start (put after the job started, or already gone) is skipped.
func (st *state) applyJobAdvance(c *JobAdvance) *JobAdvanceResult {
	j := st.jobs.find(c.Job)
	if j == nil {
		return &JobAdvanceResult{Err: unknownJob(c.Job), Stale: true}
	}
	if !j.Active() || j.Cursor != c.After {
		return &JobAdvanceResult{Job: *j, Stale: true}
	}
	prev := c.After
	for _, k := range c.Keys {
		if k <= prev || !strings.HasPrefix(k, j.Prefix) {
			return &JobAdvanceResult{Job: *j, Err: api.Errorf(api.CodeInvalidParams,
				"job %d step: key %q is not under prefix %q in order after %q", j.ID, k, j.Prefix, prev)}
		}
		prev = k
	}
	res := &JobAdvanceResult{}
	if c.Pause && len(c.Keys) == 0 {
		j.State, j.Updated = api.JobPausedRegistryFull, c.Now
		res.Job = *j
		return res
	}
	j.State = api.JobRunning
	paused := false
	for _, k := range c.Keys {
		e := st.objects.get(k)
		if e.complete == nil || j.Start.Less(e.complete.inc) {
			res.Skipped++
			j.Cursor = strings.Clone(k)
			continue
		}
		_, err := st.removeKey(k, e.complete.inc, c.Now)
		switch {
		case err == nil:
			res.Removed++
		case err.Code == api.CodeLocalDeleteRegistryFull:
			paused = true
		default:
			res.Skipped++ // cannot happen for a key found COMPLETE; counted, never retried
		}
		if paused {
			break
		}
		j.Cursor = strings.Clone(k)
	}
	j.Removed += int64(res.Removed)
	j.Skipped += int64(res.Skipped)
	j.Steps++
	j.Updated = c.Now
	switch {
	case paused:
		j.State = api.JobPausedRegistryFull
	case c.Last && !st.jobHasMore(j):
		j.State = api.JobDone
		st.jobs.pruneFinished()
	}
	res.Job = *j
	return res
}

// jobHasMore reports whether a key the job must still remove lies after
// its cursor, so a leader that missed a key cannot end a job early. It
// walks the ordered index from the cursor under the prefix and stops at
// the first such key: O(log objects + keys put after the job started).
func (st *state) jobHasMore(j *api.JobInfo) bool {
	more := false
	st.objects.ascendComplete(j.Prefix, j.Cursor, func(_ string, o *object) bool {
		more = jobOwns(j, o)
		return !more
	})
	return more
}

// jobOwns reports whether a key's COMPLETE incarnation c is one job j is
// to remove: it is no newer than the job's start.
func jobOwns(j *api.JobInfo, c *object) bool {
	return !j.Start.Less(c.inc)
}

// jobCandidates lists, in key order, up to limit keys after j's cursor
// under its prefix whose COMPLETE incarnation is at most its start, and
// whether they are all there are. It walks the ordered index from the
// cursor: O(log objects + keys visited), the visited keys being the ones
// returned plus those put after the job started.
func (st *state) jobCandidates(j *api.JobInfo, limit int) ([]string, bool) {
	var keys []string
	last := true
	st.objects.ascendComplete(j.Prefix, j.Cursor, func(k string, o *object) bool {
		if !jobOwns(j, o) {
			return true
		}
		if len(keys) == limit {
			last = false
			return false
		}
		keys = append(keys, k)
		return true
	})
	return keys, last
}

// Jobs returns every job the state keeps, by id.
func (f *FSM) Jobs() []api.JobInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]api.JobInfo, len(f.st.jobs.jobs))
	for i, j := range f.st.jobs.jobs {
		out[i] = *j
	}
	return out
}

// Job returns job id.
func (f *FSM) Job(id uint64) (api.JobInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	j := f.st.jobs.find(id)
	if j == nil {
		return api.JobInfo{}, false
	}
	return *j, true
}

// MaxJobScanKeys bounds the keys one JobCandidates call lists.
const MaxJobScanKeys = 1 << 20

// JobCandidates lists the keys after job id's cursor that the job is to
// remove (at most limit, in key order) and whether they are all there
// are. The leader proposes them, at most MaxJobStepKeys per step, with
// the job's cursor as After. It walks the ordered index under the read
// lock (O(log objects + keys listed)).
func (f *FSM) JobCandidates(id uint64, limit int) (job api.JobInfo, keys []string, last bool, ok bool) {
	limit = max(1, min(limit, MaxJobScanKeys))
	f.mu.RLock()
	defer f.mu.RUnlock()
	j := f.st.jobs.find(id)
	if j == nil {
		return api.JobInfo{}, nil, false, false
	}
	keys, last = f.st.jobCandidates(j, limit)
	return *j, keys, last, true
}
