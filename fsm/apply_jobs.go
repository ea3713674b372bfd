package fsm

import (
	"cmp"
	"slices"
	"strings"

	"sexton/api"
)

// jobTable is the state's bulk-delete jobs, by id (= the index of the
// JobStart entry, so appending keeps the order). Small: at most
// MaxActiveJobs active and MaxFinishedJobs finished jobs.
type jobTable struct {
	jobs []*api.JobInfo
	// kept holds, per active job id, the keys the job leaves although
	// their incarnation is at most its start: their put started before
	// the job and completed after it (notePutEnd). A job with none has no
	// entry. The records in jobs never carry Kept; a snapshot view fills
	// it in from here.
	kept map[uint64]*keptSet
}

// keptSet is one job's kept keys after its cursor, with their cost
// (api.JobKeptCost) against api.MaxJobKeptBytes.
type keptSet struct {
	inc   map[string]api.ObjectIncarnation
	bytes int
}

func (t *jobTable) find(id uint64) *api.JobInfo {
	i, ok := slices.BinarySearchFunc(t.jobs, id, func(j *api.JobInfo, id uint64) int { return cmp.Compare(j.ID, id) })
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

// finish ends job j in state (done or cancelled): it forgets j's kept
// keys, which only an active job reads, and the oldest finished jobs
// beyond the bound.
func (t *jobTable) finish(j *api.JobInfo, state string, now int64) {
	j.State, j.Updated = state, now
	delete(t.kept, j.ID)
	t.pruneFinished()
}

// keeps reports whether job j leaves key's COMPLETE incarnation inc
// although inc is at most its start: its put completed after the start.
func (t *jobTable) keeps(j *api.JobInfo, key string, inc api.ObjectIncarnation) bool {
	ks := t.kept[j.ID]
	if ks == nil {
		return false
	}
	k, ok := ks.inc[key]
	return ok && k == inc
}

// addKept records that job j leaves key at inc.
func (t *jobTable) addKept(j *api.JobInfo, key string, inc api.ObjectIncarnation) {
	if t.kept == nil {
		t.kept = make(map[uint64]*keptSet)
	}
	ks := t.kept[j.ID]
	if ks == nil {
		ks = &keptSet{inc: make(map[string]api.ObjectIncarnation)}
		t.kept[j.ID] = ks
	}
	if _, had := ks.inc[key]; !had {
		key = strings.Clone(key)
		ks.bytes += api.JobKeptCost(key)
	}
	ks.inc[key] = inc
}

// dropKeptThrough forgets job j's kept keys up to its cursor: the job
// never looks at them again. O(kept keys); a job has kept keys only while
// puts it found in progress complete ahead of its cursor.
func (t *jobTable) dropKeptThrough(j *api.JobInfo) {
	ks := t.kept[j.ID]
	if ks == nil {
		return
	}
	for k := range ks.inc {
		if k <= j.Cursor {
			delete(ks.inc, k)
			ks.bytes -= api.JobKeptCost(k)
		}
	}
	if len(ks.inc) == 0 {
		delete(t.kept, j.ID)
	}
}

// keptList is job id's kept keys in key order, for a snapshot record.
func (t *jobTable) keptList(id uint64) []api.JobKept {
	ks := t.kept[id]
	if ks == nil {
		return nil
	}
	out := make([]api.JobKept, 0, len(ks.inc))
	for k, inc := range ks.inc {
		out = append(out, api.JobKept{Key: k, Incarnation: inc})
	}
	slices.SortFunc(out, func(a, b api.JobKept) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// notePutEnd is called when key's put of incarnation inc completes: every
// active job that started after that put did (inc is older than its
// start) and has not yet passed key keeps key, so an acknowledged put is
// never taken by a job that started while it was in progress. The puts a
// job can keep are the ones in progress under its prefix at its start,
// which applyJobStart checked fit api.MaxJobKeptBytes. O(job records:
// at most MaxActiveJobs + MaxFinishedJobs).
func (t *jobTable) notePutEnd(key string, inc api.ObjectIncarnation) {
	for _, j := range t.jobs {
		if j.Active() && inc.Less(j.Start) && key > j.Cursor && strings.HasPrefix(key, j.Prefix) {
			t.addKept(j, key, inc)
		}
	}
}

// pendingUnder is the cost (api.JobKeptCost) of the puts in progress
// under prefix: a bound on what a job over prefix started now can keep.
// O(puts in progress).
func (st *state) pendingUnder(prefix string) (n, bytes int) {
	for k := range st.objects.pending {
		if strings.HasPrefix(k, prefix) {
			n++
			bytes += api.JobKeptCost(k)
		}
	}
	return n, bytes
}

// applyJobStart records a new prefix-delete job. Its start incarnation is
// the one a PutStart at this entry would get: a key whose COMPLETE
// incarnation is at most that was put before the job, or its put was in
// progress at the job's start. The job removes the former and keeps the
// latter (notePutEnd): it removes exactly the keys whose COMPLETE
// incarnation existed at its start. The puts in progress under the prefix
// must fit the bound on what a job keeps, or the job is refused.
func (st *state) applyJobStart(index uint64, c *JobStart) *JobResult {
	if n := st.jobs.active(); n >= MaxActiveJobs {
		return &JobResult{Err: api.Errorf(api.CodeUnavailable, "%d bulk-delete jobs are active, at most %d; cancel one or wait", n, MaxActiveJobs)}
	}
	if n, bytes := st.pendingUnder(c.Prefix); bytes > api.MaxJobKeptBytes {
		return &JobResult{Err: api.Errorf(api.CodeUnavailable,
			"%d puts are in progress under prefix %q (%d bytes of keys to track, at most %d): the job could not keep those acknowledged after its start; retry when fewer puts are in flight, or narrow the prefix",
			n, c.Prefix, bytes, api.MaxJobKeptBytes)}
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
// stored answer is the job's id (jobStartAnswer), which is not its start
// incarnation's Low on a rebuilt cluster (that adds the rebuild's
// incarnation base).
func (st *state) applyJobStartSessioned(index uint64, c *JobStart) *JobResult {
	return runOnce(st, CmdJobStart, c.Session, c.Now, once[*JobResult]{
		replay: func(p *sessResult) *JobResult {
			out := &JobResult{Err: p.err, Duplicate: true}
			if p.err == nil {
				out.Job = st.jobInfo(st.storedJobID(p.inc))
			}
			return out
		},
		refused: refusedJob,
		keep: func(res *JobResult) sessResult {
			res.Err = storedErr(res.Err)
			r := sessResult{err: res.Err}
			if res.Err == nil {
				r.inc = jobStartAnswer(res.Job.ID)
			}
			return r
		},
	}, func() *JobResult { return st.applyJobStart(index, c) })
}

// refusedJob answers a job command the session table refused.
func refusedJob(err *api.Error, dup bool) *JobResult { return &JobResult{Err: err, Duplicate: dup} }

// jobStartAnswer is how a JobStart's session result keeps the job's id:
// in an incarnation (the result's one field wide enough) whose High is 0.
// A result with a non-zero High holds the job's start incarnation instead
// (storedJobID).
func jobStartAnswer(id uint64) api.ObjectIncarnation { return api.ObjectIncarnation{Low: id} }

// storedJobID is the job id a JobStart's stored result names. A result
// holding the job's start incarnation (High, the cluster id, non-zero:
// snapshots written before results kept the id) names the job with that
// start; if that job was dropped from the finished list, the start less
// the cluster's incarnation base.
func (st *state) storedJobID(inc api.ObjectIncarnation) uint64 {
	if inc.High == 0 {
		return inc.Low
	}
	for _, j := range st.jobs.jobs {
		if j.Start == inc {
			return j.ID
		}
	}
	if inc.Low > st.incBase {
		return inc.Low - st.incBase
	}
	return inc.Low
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
		st.jobs.finish(j, api.JobCancelled, c.Now)
	}
	return &JobResult{Job: *j}
}

func (st *state) applyJobCancelSessioned(c *JobCancel) *JobResult {
	return runOnce(st, CmdJobCancel, c.Session, c.Now, once[*JobResult]{
		replay: func(p *sessResult) *JobResult {
			return &JobResult{Err: p.err, Job: st.jobInfo(c.Job), Duplicate: true}
		},
		refused: refusedJob,
		keep: func(res *JobResult) sessResult {
			res.Err = storedErr(res.Err)
			return sessResult{err: res.Err}
		},
	}, func() *JobResult { return st.applyJobCancel(c) })
}

// applyJobAdvance is one step of a job. A step for a job that is not
// active, or whose cursor is not the one the step expects, is stale and
// changes nothing: a retried or duplicated step, or one from a deposed
// leader, is harmless. Keys must be under the prefix, after the cursor and
// strictly increasing (the leader lists them so); otherwise the step is
// refused whole.
//
// Each key the job owns (owns: its COMPLETE incarnation existed at the
// job's start) is removed exactly as Remove removes it (tasks reserved
// first), but a step fills the registry only up to its capacity less the
// clients' reserve (JobRegistryReserve), counted in task slots. The first
// key that does not fit pauses the job and ends the step: the cursor stays
// before it, so the key is neither skipped nor failed — the next step
// retries it. A key the job does not own (put after the job started, its
// put completed after the start, or already gone) is skipped.
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
	limit := st.reg.capacity - JobRegistryReserve(st.reg.capacity)
	paused := false
	for _, k := range c.Keys {
		e := st.objects.get(k)
		if e.complete == nil || !st.jobs.owns(j, k, e.complete) {
			res.Skipped++
			j.Cursor = strings.Clone(k)
			continue
		}
		_, err := st.removeKeyWithin(k, e.complete.inc, c.Now, limit)
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
	st.jobs.dropKeptThrough(j)
	switch {
	case paused:
		j.State = api.JobPausedRegistryFull
	case c.Last && !st.jobHasMore(j):
		st.jobs.finish(j, api.JobDone, c.Now)
	}
	res.Job = *j
	return res
}

// JobRegistryReserve is the share of a registry of capacity task slots
// that bulk-delete jobs leave to clients' own Removes and overwrites: a
// job step never fills the registry past capacity less this, so a job
// never makes a client's Remove fail closed for lack of room.
func JobRegistryReserve(capacity int) int { return capacity / 10 }

// jobHasMore reports whether a key the job must still remove lies after
// its cursor, so a leader that missed a key cannot end a job early. It
// walks the ordered index from the cursor under the prefix and stops at
// the first such key: O(log objects + keys put after the job started).
func (st *state) jobHasMore(j *api.JobInfo) bool {
	more := false
	st.objects.ascendComplete(j.Prefix, j.Cursor, func(k string, o *object) bool {
		more = st.jobs.owns(j, k, o)
		return !more
	})
	return more
}

// owns reports whether key's COMPLETE incarnation c is one job j is to
// remove: it existed at the job's start, i.e. it is no newer than the
// start and its put did not complete after the start (keeps).
func (t *jobTable) owns(j *api.JobInfo, key string, c *object) bool {
	return !j.Start.Less(c.inc) && !t.keeps(j, key, c.inc)
}

// jobTasks is an upper bound on the task slots removing o takes: its
// LOCAL_DISK replicas on segments that take tasks (planTasks, which also
// leaves out tasks already pending, is not safe under the read lock).
func (st *state) jobTasks(o *object) int {
	n := 0
	for _, r := range o.replicas() {
		if r.Kind != api.ReplicaLocalDisk {
			continue
		}
		if seg := st.segments[r.Segment]; seg != nil && !seg.retired && seg.capable() {
			n++
		}
	}
	return n
}

// jobCandidates lists, in key order, up to limit keys after j's cursor
// under its prefix that the job owns, with the task slots each takes
// (jobTasks), and whether they are all there are. It walks the ordered
// index from the cursor: O(log objects + keys visited), the visited keys
// being the ones returned plus those the job does not own.
func (st *state) jobCandidates(j *api.JobInfo, limit int) ([]JobCandidate, bool) {
	var out []JobCandidate
	last := true
	st.objects.ascendComplete(j.Prefix, j.Cursor, func(k string, o *object) bool {
		if !st.jobs.owns(j, k, o) {
			return true
		}
		if len(out) == limit {
			last = false
			return false
		}
		out = append(out, JobCandidate{Key: k, Tasks: st.jobTasks(o)})
		return true
	})
	return out, last
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

// JobCandidate is a key a job is to remove and the task slots removing
// it takes at most.
type JobCandidate struct {
	Key   string
	Tasks int
}

// JobCandidates lists the keys after job id's cursor that the job is to
// remove (at most limit, in key order) and whether they are all there
// are. The leader proposes them, at most MaxJobStepKeys per step and no
// more task slots than the registry has above the clients' reserve, with
// the job's cursor as After. It walks the ordered index under the read
// lock (O(log objects + keys listed)).
func (f *FSM) JobCandidates(id uint64, limit int) (job api.JobInfo, keys []JobCandidate, last bool, ok bool) {
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
