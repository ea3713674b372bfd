package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sexton/api"
	"sexton/internal/ctxsleep"
)

// DeleteWatch follows the delete tasks of some keys until none is
// pending, task by task (`sexton rm --wait` shows it per replica). A task
// seen pending and no longer listed was acknowledged: its holder's ack
// committed; a task acknowledged before the first look is not seen at
// all. A key is done once it has no task pending and no DFS removal
// record to write.
type DeleteWatch struct {
	keys  []string       // still with pending tasks
	seen  map[uint64]int // task id -> index in tasks
	tasks []WatchedTask  // in the order first seen
}

// WatchedTask is a delete task as a DeleteWatch saw it last.
type WatchedTask struct {
	Task     api.LocalDeleteTask
	Progress api.TaskProgress // the leader's view; zero from a master that sent none
	Seen     time.Time        // when it was last listed
	// Acknowledged: it was listed once and is not any more.
	Acknowledged bool
}

// NewDeleteWatch watches keys (each once).
func NewDeleteWatch(keys []string) *DeleteWatch {
	w := &DeleteWatch{seen: map[uint64]int{}}
	dup := map[string]bool{}
	for _, k := range keys {
		if !dup[k] {
			dup[k] = true
			w.keys = append(w.keys, k)
		}
	}
	return w
}

// Poll looks once at every key still pending, through c, at now; it
// returns the indexes (in Tasks) of the tasks that are new or changed.
func (w *DeleteWatch) Poll(ctx context.Context, c *Client, now time.Time) ([]int, error) {
	var changed []int
	var still []string
	for _, k := range w.keys {
		resp, err := c.DeleteProgress(ctx, k)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", k, err)
		}
		listed := map[uint64]bool{}
		for i, t := range resp.Tasks {
			listed[t.ID] = true
			var p api.TaskProgress
			if len(resp.Progress) == len(resp.Tasks) {
				p = resp.Progress[i]
			}
			o := WatchedTask{Task: t, Progress: p, Seen: now}
			j, ok := w.seen[t.ID]
			if !ok {
				w.seen[t.ID] = len(w.tasks)
				changed = append(changed, len(w.tasks))
				w.tasks = append(w.tasks, o)
				continue
			}
			if q := w.tasks[j]; q.Acknowledged || q.Progress.State != p.State || q.Progress.Attempts != p.Attempts || q.Progress.LastError != p.LastError || q.Progress.LeaseEnd != p.LeaseEnd {
				changed = append(changed, j)
			}
			w.tasks[j] = o
		}
		for j := range w.tasks {
			t := &w.tasks[j]
			if t.Task.Key == k && !listed[t.Task.ID] && !t.Acknowledged {
				t.Acknowledged = true
				changed = append(changed, j)
			}
		}
		if resp.Total > 0 || resp.DFSRecordsPending > 0 {
			// A DFS removal is done once its removal record is in the
			// DFS root's journal, as a LOCAL_DISK one once its tasks are
			// acknowledged.
			still = append(still, k)
		}
	}
	w.keys = still
	return changed, nil
}

// Done says whether no watched key has anything pending.
func (w *DeleteWatch) Done() bool { return len(w.keys) == 0 }

// Tasks are the tasks seen, in the order first seen.
func (w *DeleteWatch) Tasks() []WatchedTask { return w.tasks }

// Unacknowledged counts the tasks seen that are not acknowledged.
func (w *DeleteWatch) Unacknowledged() int {
	n := 0
	for _, t := range w.tasks {
		if !t.Acknowledged {
			n++
		}
	}
	return n
}

// Wait polls until no watched key has anything pending, backing off from
// 5ms to a quarter second; after each poll it hands seen the poll's time
// and the indexes of the tasks that changed. It returns nil once done,
// ctx's error once ctx ends first (a poll cut short by it included), or
// the error of a poll that failed otherwise.
func (w *DeleteWatch) Wait(ctx context.Context, c *Client, seen func(now time.Time, changed []int)) error {
	pause := 5 * time.Millisecond
	for {
		now := time.Now()
		changed, err := w.Poll(ctx, c, now)
		if err != nil && (ctx.Err() == nil || !errors.Is(err, context.DeadlineExceeded) && api.CodeOf(err) != api.CodeTimeout) {
			return err
		}
		seen(now, changed)
		if w.Done() {
			return nil
		}
		if !ctxsleep.Sleep(ctx, pause) || ctx.Err() != nil {
			return ctx.Err()
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}
