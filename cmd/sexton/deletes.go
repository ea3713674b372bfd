package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/jsonout"
)

// stateAcknowledged is rm --wait's state of a task it saw pending and that
// is gone now: its holder's ack committed. The other states are the
// master's (api.TaskHolderDown, TaskWithheld, TaskLeased, TaskRetrying,
// TaskPending).
const stateAcknowledged = "acknowledged"

// fmtAge prints how long ago a unix-nanosecond instant was; "?" when it
// is unknown (a task restored without a creation time).
func fmtAge(at int64, now time.Time) string {
	if at <= 0 {
		return "?"
	}
	d := max(now.Sub(time.Unix(0, at)), 0)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// taskState is a task's STATE in the text tables: the master's state,
// and for one a read lease holds back, until when.
func taskState(t jsonout.Task) string {
	if t.State == api.TaskLeased && t.LeaseEnd > 0 {
		return "withheld by a read lease until " + time.Unix(0, t.LeaseEnd).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return orDash(t.State)
}

// printDeleteTable prints delete tasks one a line, as stat and rm --wait
// show them.
func printDeleteTable(w io.Writer, tasks []jsonout.Task, withKey bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := "SEGMENT\tHOLDER\tINCARNATION\tSTATE\tAGE\tATTEMPTS\tLAST ERROR"
	if withKey {
		head = "KEY\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, t := range tasks {
		if withKey {
			fmt.Fprintf(tw, "%s\t", t.Key)
		}
		age := "?"
		if t.AgeMs > 0 || t.Created > 0 {
			age = fmtAge(t.Created, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.Segment, orDash(t.Holder), t.Incarnation, taskState(t), age, t.Attempts, orDash(t.LastError))
	}
	return tw.Flush()
}

// watchedTasks renders the tasks w saw, an acknowledged one in state
// acknowledged.
func watchedTasks(w *client.DeleteWatch) []jsonout.Task {
	out := make([]jsonout.Task, 0, len(w.Tasks()))
	for _, t := range w.Tasks() {
		o := jsonout.TaskOf(t.Task, t.Progress, t.Seen)
		if t.Acknowledged {
			o.State = stateAcknowledged
		}
		out = append(out, o)
	}
	return out
}

// waitLines bounds the table rm --wait redraws on a terminal.
const waitLines = 20

// waitDeleted waits (if d > 0) until no delete task of keys is pending,
// showing per replica where it stands: on stderr while it waits (a table
// redrawn in place on a terminal, otherwise a line per change), then the
// final table (or JSON) on stdout. It fails when d passes first.
func waitDeleted(e *env, cl *client.Client, keys []string, d time.Duration) error {
	if d <= 0 {
		if e.json {
			return printJSON(jsonout.Rm{Removed: len(keys), Replicas: []jsonout.Task{}})
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w := client.NewDeleteWatch(keys)
	live := !e.json && progressTo.Terminal
	drawn := 0 // lines of the live table on stderr
	tasks := []jsonout.Task{}
	err := w.Wait(ctx, cl, func(now time.Time, changed []int) {
		tasks = watchedTasks(w)
		switch {
		case live:
			drawn = redrawWait(progressTo.W, tasks, drawn, now)
		case !e.json:
			for _, j := range changed {
				t := tasks[j]
				fmt.Fprintf(progressTo.W, "rm --wait: %s segment=%s holder=%s state=%s attempts=%d error=%s\n", t.Key, t.Segment, orDash(t.Holder), taskState(t), t.Attempts, orDash(t.LastError))
			}
		}
	})
	var waitErr error
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		waitErr = fmt.Errorf("rm --wait: removed, but %d of %d replicas seen are not acknowledged after %s (exit 1; the tasks stay, see `sexton stat KEY`)", w.Unacknowledged(), len(tasks), d)
	default:
		return fmt.Errorf("rm --wait: removed, but %w", err)
	}
	if drawn > 0 {
		fmt.Fprintf(progressTo.W, "\x1b[%dA\x1b[J", drawn) // the final table goes to stdout
	}
	now := time.Now()
	if err := e.output(jsonout.Rm{Removed: len(keys), Done: waitErr == nil, Replicas: tasks}, func() error {
		if len(tasks) > 0 {
			if err := printDeleteTable(os.Stdout, tasks, true, now); err != nil {
				return err
			}
		}
		if waitErr == nil {
			fmt.Printf("all %d replicas seen acknowledged\n", len(tasks))
		}
		return nil
	}); err != nil {
		return err
	}
	return waitErr
}

// redrawWait replaces the table drawn last (drawn lines) with the current
// one, the unacknowledged replicas first, at most waitLines of them.
func redrawWait(out io.Writer, tasks []jsonout.Task, drawn int, now time.Time) int {
	var b strings.Builder
	if drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", drawn)
	}
	rows := make([]jsonout.Task, 0, len(tasks))
	for _, t := range tasks {
		if t.State != stateAcknowledged {
			rows = append(rows, t)
		}
	}
	acked := len(tasks) - len(rows)
	more := max(len(rows)-waitLines, 0)
	rows = rows[:min(len(rows), waitLines)]
	var tb strings.Builder
	_ = printDeleteTable(&tb, rows, true, now)
	fmt.Fprintf(&tb, "waiting: %d of %d replicas acknowledged", acked, len(tasks))
	if more > 0 {
		fmt.Fprintf(&tb, ", %d more pending not shown", more)
	}
	tb.WriteString("\n")
	b.WriteString(tb.String())
	fmt.Fprint(out, b.String())
	return strings.Count(tb.String(), "\n")
}
