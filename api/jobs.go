package api

// Bulk-delete jobs: a prefix delete is replicated state (a job with a
// cursor) that the leader advances in bounded steps, so it has Remove's
// guarantees however many keys the prefix holds.
const (
	MethodJobStart  = "JobStart"
	MethodJobList   = "JobList"
	MethodJobCancel = "JobCancel"
)

// Job states, as shown by JobInfo.State.
const (
	JobRunning            = "running"
	JobPausedRegistryFull = "paused_registry_full"
	JobCancelled          = "cancelled"
	JobDone               = "done"
)

// JobKindPrefixDelete is the only job kind today.
const JobKindPrefixDelete = "prefix_delete"

// MaxJobStepKeys bounds the keys one job step (one Raft entry) removes.
const MaxJobStepKeys = 1024

// JobInfo is one bulk-delete job as the replicated state holds it.
type JobInfo struct {
	// ID is the index of the entry that started the job.
	ID     uint64 `msgpack:"id"`
	Kind   string `msgpack:"kind"`
	Prefix string `msgpack:"prefix"`
	// Start is the newest incarnation the job removes: a key whose
	// COMPLETE incarnation is newer was put after the job started and is
	// left alone, and so is one listed in Kept.
	Start ObjectIncarnation `msgpack:"start"`
	// Cursor is the last key the job has dealt with, in byte order; every
	// key up to it under the prefix is done.
	Cursor  string `msgpack:"cursor"`
	Removed int64  `msgpack:"removed"`
	// Skipped counts keys the job looked at and left: put after its start
	// or acknowledged after it, or already gone when their step applied.
	Skipped int64  `msgpack:"skipped"`
	State   string `msgpack:"state"`
	Steps   int64  `msgpack:"steps"`
	// Created and Updated are the leader's clock (unix ns) of the entry
	// that started the job and of the last one that changed it.
	Created int64 `msgpack:"created"`
	Updated int64 `msgpack:"updated"`
	// Kept lists, in key order, the keys after the cursor whose put
	// started before the job and was acknowledged (PutEnd applied) after
	// it: their incarnation is older than Start, yet the job leaves them.
	// Only snapshots carry it; the job queries leave it empty.
	Kept []JobKept `msgpack:"kept,omitempty"`
}

// JobKept is one key a job leaves although its incarnation is older than
// the job's start: the put of that incarnation completed after the job
// started.
type JobKept struct {
	Key         string            `msgpack:"key"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
}

// MaxJobKeptBytes bounds a job's Kept list, counted with JobKeptCost, so
// a job record fits a snapshot chunk (1 MiB) with room for its prefix and
// cursor. A job starts only if the puts in progress under its prefix fit
// it: only they can complete after the start with an older incarnation.
const MaxJobKeptBytes = 768 << 10

// JobKeptCost is what one Kept key counts against MaxJobKeptBytes: the
// key and a generous bound on its entry's encoding around it.
func JobKeptCost(key string) int { return len(key) + 64 }

// Active reports whether the leader still advances the job.
func (j JobInfo) Active() bool { return j.State == JobRunning || j.State == JobPausedRegistryFull }

// JobStartRequest starts a prefix delete. All must be set to start one
// with an empty prefix (every key), so an empty prefix by mistake does
// not wipe the cluster.
type JobStartRequest struct {
	Prefix  string  `msgpack:"prefix"`
	All     bool    `msgpack:"all"`
	Session Session `msgpack:"sess,omitempty"`
}

// JobStartResponse names the started job.
type JobStartResponse struct {
	Job JobInfo `msgpack:"job"`
}

// JobListResponse lists the jobs the state keeps (active ones and the most
// recent finished ones), by id.
type JobListResponse struct {
	Jobs  []JobInfo `msgpack:"jobs"`
	Index uint64    `msgpack:"index"`
}

// JobCancelRequest cancels an active job: keys it removed stay removed,
// the rest stay.
type JobCancelRequest struct {
	ID      uint64  `msgpack:"id"`
	Session Session `msgpack:"sess,omitempty"`
}

// JobCancelResponse is the job after the cancel.
type JobCancelResponse struct {
	Job JobInfo `msgpack:"job"`
}
