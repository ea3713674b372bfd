package fsm

import "sexton/api"

// Bulk-delete job command types (docs/DESIGN.md §12): a prefix delete is a job
// in the replicated state whose cursor the leader advances in bounded
// steps, each one entry that removes keys exactly as Remove does.
const (
	CmdJobStart   CommandType = 22
	CmdJobAdvance CommandType = 23
	CmdJobCancel  CommandType = 24
)

const (
	JobStartV1   uint8 = 1
	JobAdvanceV1 uint8 = 1
	JobCancelV1  uint8 = 1
)

// Bounds on the jobs the state keeps. A job costs a few hundred bytes; the
// bounds keep the list an operator reads short and the state small.
const (
	// MaxActiveJobs bounds the running and paused jobs: a JobStart beyond
	// it is refused (UNAVAILABLE).
	MaxActiveJobs = 16
	// MaxFinishedJobs is how many done or cancelled jobs are kept for
	// operators to read; older ones are dropped first.
	MaxFinishedJobs = 32
	// MaxJobStepKeys bounds the keys of one JobAdvance.
	MaxJobStepKeys = api.MaxJobStepKeys
)

// JobStart starts a prefix delete of every key under Prefix whose COMPLETE
// incarnation existed at this entry: at most the job's start incarnation
// (the one a PutStart here would get), and not completed by a PutEnd
// applied after this entry. A key put (or overwritten) after the job
// started has a newer incarnation and stays; one whose put was in
// progress here stays once that put completes. The job's id is this
// entry's index.
type JobStart struct {
	V       uint8       `msgpack:"v"`
	Prefix  string      `msgpack:"prefix"`
	Session api.Session `msgpack:"sess,omitempty"`
	Now     int64       `msgpack:"now"`
}

// JobAdvance is one step of a job, proposed by the leader: it removes the
// listed keys the job owns (applyJobAdvance) and moves the cursor to
// the last one dealt with. It names the cursor it expects (After), so a
// retried or duplicate step finds the cursor moved and changes nothing.
// Pause with no keys records that the leader holds the job back because
// the registry is full; a step with keys sets it running again. Last says
// the leader saw no key after these; the job is then done, after Apply has
// checked that no key the job owns remains after the cursor.
type JobAdvance struct {
	V     uint8    `msgpack:"v"`
	Job   uint64   `msgpack:"job"`
	After string   `msgpack:"after"`
	Keys  []string `msgpack:"keys"`
	Last  bool     `msgpack:"last"`
	Pause bool     `msgpack:"pause"`
	Now   int64    `msgpack:"now"`
}

// JobCancel stops an active job: what it removed stays removed, nothing
// else is touched.
type JobCancel struct {
	V       uint8       `msgpack:"v"`
	Job     uint64      `msgpack:"job"`
	Session api.Session `msgpack:"sess,omitempty"`
	Now     int64       `msgpack:"now"`
}

// JobResult answers JobStart and JobCancel with the job after the entry.
type JobResult struct {
	Err       *api.Error
	Job       api.JobInfo
	Duplicate bool
}

// JobAdvanceResult answers a step: what it removed and skipped, and
// whether it was stale (the job was not active or its cursor was not
// After: nothing changed).
type JobAdvanceResult struct {
	Err     *api.Error
	Job     api.JobInfo
	Removed int
	Skipped int
	Stale   bool
}

func boundsJobStart(c *JobStart, b bounder) error {
	return firstErr(b.keyLen("job prefix", c.Prefix), b.session(c.Session))
}

func boundsJobAdvance(c *JobAdvance, b bounder) error {
	if len(c.Keys) > MaxJobStepKeys {
		return b.bad("%d keys exceed %d", len(c.Keys), MaxJobStepKeys)
	}
	if err := b.keyLen("job cursor", c.After); err != nil {
		return err
	}
	for _, k := range c.Keys {
		if err := b.keyLen("key", k); err != nil {
			return err
		}
	}
	return nil
}

func boundsJobCancel(c *JobCancel, b bounder) error { return b.session(c.Session) }
