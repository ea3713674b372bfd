package backoff

import (
	"sync"
	"time"

	"sexton/api"
)

// Tasks is the delivery state of the delete tasks this term gave out. The
// zero Tasks is not usable: make one with New.
type Tasks struct {
	mu           sync.Mutex
	retries      map[uint64]taskRetry // task id → deliveries and backoff
	retrySweepAt int
}

// minRetrySweep is the map size below which task backoffs are not swept
// at all.
const minRetrySweep = 1 << 12

// New is a term's task delivery state before its first fetch.
func New() *Tasks {
	s := &Tasks{}
	s.Reset()
	return s
}

// Reset forgets every task's deliveries (a new term).
func (s *Tasks) Reset() {
	s.mu.Lock()
	s.retries = map[uint64]taskRetry{}
	s.retrySweepAt = minRetrySweep
	s.mu.Unlock()
}

// A task that failed (acked RetryableFailure, or fetched again without an
// answer) is withheld from fetches for RetryBackoffMin, doubling with
// every further failure up to retryBackoffMax, so failing tasks do not
// hide the ones behind them.
const (
	RetryBackoffMin = 500 * time.Millisecond
	retryBackoffMax = 30 * time.Second
)

// taskRetry is one task's delivery state for the mount epoch it was last
// given to: a new mount (another process) starts without it.
type taskRetry struct {
	epoch    uint64
	failures int
	until    time.Time // backoff end
	// given is when the task was last handed to the mount and neither
	// acked nor reported failed since; zero when nothing is outstanding.
	given time.Time
	// attempts, lastGiven and lastErr describe the task for ListTasks
	// across mounts: deliveries this term, the last of them, and why the
	// last failed one failed ("" when it has not failed in this mount).
	attempts  int
	lastGiven time.Time
	lastErr   string
}

// renew is r for the mount at epoch: a new mount starts without backoff
// and without the old mount's error, but its deliveries still count.
func (r taskRetry) renew(epoch uint64) taskRetry {
	if r.epoch == epoch {
		return r
	}
	return taskRetry{epoch: epoch, attempts: r.attempts, lastGiven: r.lastGiven}
}

// TaskAttempts is what ListTasks shows of one task's deliveries.
type TaskAttempts struct {
	Attempts  int
	LastGiven time.Time
	LastErr   string // set only while it is the current mount's
	Failing   bool   // the last attempt at the current mount failed
}

// Withheld reports whether task id may not be given to the holder mounted
// at epoch now, and until when: its incarnation is leased until leaseEnd
// (zero: not leased; a reader may still be reading that copy), or the task
// is backing off after failures.
//
// A holder fetches again only after answering what it fetched (its loop
// is fetch, tombstone, ack), so a task it was given and fetches again
// without an ack or a RetryableFailure in between failed silently (the
// holder does not ack failures): it backs off as if reported.
func (s *Tasks) Withheld(id, epoch uint64, leaseEnd, now time.Time) (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := leaseEnd
	r, ok := s.retries[id]
	if ok && r.epoch == epoch && !r.given.IsZero() {
		r = s.failLocked(id, epoch, "fetched again without an answer", now)
	}
	if ok && r.epoch == epoch && now.Before(r.until) && r.until.After(end) {
		end = r.until
	}
	return !end.IsZero(), end
}

// Given records that tasks were handed to the holder mounted at epoch.
func (s *Tasks) Given(tasks []api.LocalDeleteTask, epoch uint64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		r := s.retries[t.ID].renew(epoch)
		r.given = now
		r.lastGiven = now
		r.attempts++
		s.retries[t.ID] = r
	}
	s.sweepRetriesLocked(now)
}

// TaskFailed backs task id off after a RetryableFailure reported by the
// holder mounted at epoch, and keeps why.
func (s *Tasks) TaskFailed(id, epoch uint64, why string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(id, epoch, why, now)
}

func (s *Tasks) failLocked(id, epoch uint64, why string, now time.Time) taskRetry {
	r := s.retries[id].renew(epoch)
	if why == "" {
		why = "holder reported a retryable failure"
	}
	r.lastErr = why
	r.failures++
	r.given = time.Time{}
	d := RetryBackoffMin << min(r.failures-1, 16)
	r.until = now.Add(min(d, retryBackoffMax))
	s.retries[id] = r
	return r
}

// sweepRetriesLocked forgets, once the map has doubled, entries whose
// backoff and delivery both lie longer than the longest backoff back: the
// task is gone (acked under another leader, retired) or its holder went
// quiet. Forgetting costs at most one missed backoff.
func (s *Tasks) sweepRetriesLocked(now time.Time) {
	if len(s.retries) < s.retrySweepAt {
		return
	}
	for id, r := range s.retries {
		if now.Sub(r.until) > retryBackoffMax && now.Sub(r.given) > retryBackoffMax {
			delete(s.retries, id)
		}
	}
	s.retrySweepAt = max(2*len(s.retries), minRetrySweep)
}

// AttemptsOf is what this term knows of each task's deliveries; a task
// is failing when its last attempt at the mount at epochs[i] failed.
func (s *Tasks) AttemptsOf(ids []uint64, epochs []uint64) []TaskAttempts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskAttempts, len(ids))
	for i, id := range ids {
		r, ok := s.retries[id]
		if !ok {
			continue
		}
		out[i] = TaskAttempts{Attempts: r.attempts, LastGiven: r.lastGiven}
		if r.epoch == epochs[i] && r.failures > 0 {
			out[i].LastErr, out[i].Failing = r.lastErr, true
		}
	}
	return out
}

// TaskDone forgets a task that ended.
func (s *Tasks) TaskDone(id uint64) {
	s.mu.Lock()
	delete(s.retries, id)
	s.mu.Unlock()
}
