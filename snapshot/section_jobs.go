package snapshot

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// SectionJobs (1.3.0) holds the bulk-delete jobs the state keeps: one Job
// each, by id.
const SectionJobs = "jobs"

// Job is one bulk-delete job (1.3.0; its Kept keys 1.4.0).
type Job = api.JobInfo

var jobsSection = sectionSpec{
	name: SectionJobs, since: Format130, required: true,
	put:   putTyped(SectionJobs, "snapshot.Job records", checkJob, addReflect[Job]),
	get:   getJob,
	count: func(c *Counts) { c.Jobs++ },
}

// checkJob refuses a job carrying a field the writer's format lacks.
func checkJob(w *Writer, j *Job) error {
	if !atLeast140(w.format) && len(j.Kept) != 0 {
		return fmt.Errorf("%w: job %d: kept keys need format %s, not %s", ErrWriterUsage, j.ID, Format140, w.format)
	}
	return validateJob(j)
}

// getJob decodes a job record of format strictly: the bounded walk
// first (no claimed length beyond the bytes at hand), then the fields,
// refusing any this build or the format does not know, then the job's own
// bounds.
func getJob(mr *mpReader, format string) (any, error) {
	start := mr.off
	if err := mr.skip(); err != nil {
		return nil, err
	}
	raw := mr.b[start:mr.off]
	if !atLeast140(format) {
		if err := refuseJobField(raw, "kept", format, Format140); err != nil {
			return nil, err
		}
	}
	j := new(Job)
	dec := msgpack.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(j); err != nil {
		return nil, corrupt(err)
	}
	if err := validateJob(j); err != nil {
		return nil, corrupt(err)
	}
	return j, nil
}

// refuseJobField refuses a job record (already walked by skip) that names
// the field a later format (since) added: the reflection decoder would
// take it whatever the stream's format.
func refuseJobField(raw []byte, field, format, since string) error {
	r := &mpReader{b: raw}
	n, err := r.recordMap("job")
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name, err := r.strBytes("job field name")
		if err != nil {
			return err
		}
		if string(name) == field {
			return errNewerField("job", name, format, since)
		}
		if err := r.skip(); err != nil {
			return err
		}
	}
	return nil
}

// validateJob checks a job record's bounds and that its state is one this
// build knows.
func validateJob(j *Job) error {
	switch {
	case j.ID == 0:
		return fmt.Errorf("job with id 0")
	case j.Kind != api.JobKindPrefixDelete:
		return fmt.Errorf("job %d: unknown kind %q", j.ID, j.Kind)
	case len(j.Prefix) > api.MaxKeyLen || len(j.Cursor) > api.MaxKeyLen:
		return fmt.Errorf("job %d: prefix or cursor longer than %d bytes", j.ID, api.MaxKeyLen)
	case j.Cursor != "" && !strings.HasPrefix(j.Cursor, j.Prefix):
		return fmt.Errorf("job %d: cursor %q is not under prefix %q", j.ID, j.Cursor, j.Prefix)
	case j.Removed < 0 || j.Skipped < 0 || j.Steps < 0:
		return fmt.Errorf("job %d: negative count", j.ID)
	}
	switch j.State {
	case api.JobRunning, api.JobPausedRegistryFull, api.JobCancelled, api.JobDone:
	default:
		return fmt.Errorf("job %d: unknown state %q", j.ID, j.State)
	}
	return validateJobKept(j)
}

// validateJobKept checks a job's kept keys: an active job's only, each a
// valid key under the prefix after the cursor, in strictly increasing
// order, of an incarnation older than the job's start, all within
// api.MaxJobKeptBytes.
func validateJobKept(j *Job) error {
	if len(j.Kept) == 0 {
		return nil
	}
	if !j.Active() {
		return fmt.Errorf("job %d: kept keys in a %s job", j.ID, j.State)
	}
	bytes, prev := 0, j.Cursor
	for _, k := range j.Kept {
		if err := api.ValidKey(k.Key); err != nil {
			return fmt.Errorf("job %d: kept key: %v", j.ID, err)
		}
		if k.Key <= prev || !strings.HasPrefix(k.Key, j.Prefix) {
			return fmt.Errorf("job %d: kept key %q is not under prefix %q in order after %q", j.ID, k.Key, j.Prefix, prev)
		}
		if k.Incarnation.IsZero() || !k.Incarnation.Less(j.Start) {
			return fmt.Errorf("job %d: kept key %q at %s, not older than the start %s", j.ID, k.Key, k.Incarnation, j.Start)
		}
		if bytes += api.JobKeptCost(k.Key); bytes > api.MaxJobKeptBytes {
			return fmt.Errorf("job %d: kept keys exceed %d bytes", j.ID, api.MaxJobKeptBytes)
		}
		prev = k.Key
	}
	return nil
}
