package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/jsonout"
)

// Bulk deletes: rm --prefix / --all start a replicated job that the
// leader advances; operator jobs shows and cancels them.

// confirmAllFlag is the flag rm --all needs, so that no typo or forgotten
// argument deletes every key.
const confirmAllFlag = "yes-delete-everything"

// rmPrefixFlags are rm's bulk-delete flags.
type rmPrefixFlags struct {
	prefix  *string
	all     *bool
	confirm *bool
}

func addRmPrefixFlags(fs *flag.FlagSet) rmPrefixFlags {
	return rmPrefixFlags{
		prefix:  fs.String("prefix", "", "remove every key under this prefix that exists now, as a replicated job (keys whose put is acknowledged later stay); prints the job id"),
		all:     fs.Bool("all", false, "remove every key that exists now (the prefix \"\"); needs --"+confirmAllFlag),
		confirm: fs.Bool(confirmAllFlag, false, "confirm rm --all"),
	}
}

// wanted reports whether rm was asked for a bulk delete.
func (f rmPrefixFlags) wanted() bool { return *f.prefix != "" || *f.all }

// runRmPrefix starts a prefix job and, with wait > 0, follows it until it
// is done (printing its progress on stderr) or wait passes.
func runRmPrefix(e *env, f rmPrefixFlags, keys []string, wait time.Duration) error {
	switch {
	case len(keys) != 0:
		return usagef("rm --prefix/--all takes no KEY")
	case *f.all && *f.prefix != "":
		return usagef("rm: --all and --prefix exclude each other")
	case *f.all && !*f.confirm:
		return usagef("rm --all removes every key in the cluster: add --%s to confirm", confirmAllFlag)
	}
	cl, err := e.client()
	if err != nil {
		return err
	}
	job, err := cl.StartPrefixDelete(context.Background(), *f.prefix, *f.all)
	if err != nil {
		return fmt.Errorf("rm --prefix %q: %w", *f.prefix, err)
	}
	if !e.json {
		fmt.Printf("job %d: removing keys under %q acknowledged before it started\n", job.ID, job.Prefix)
	}
	if wait <= 0 {
		if e.json {
			return printJSON(jsonout.RmJob(job))
		}
		return nil
	}
	j, err := waitJob(cl, job.ID, wait, !e.json)
	if e.json && j.ID != 0 {
		if perr := printJSON(jsonout.RmJob(j)); perr != nil {
			return perr
		}
	}
	return err
}

// waitJob follows job id until it ends or d passes and returns the job as
// last seen; text says whether to print the outcome line on stdout (not
// with --json, whose caller prints the job).
func waitJob(cl *client.Client, id uint64, d time.Duration, text bool) (api.JobInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start, last := time.Now(), time.Time{}
	j, err := cl.WaitJob(ctx, id, func(j api.JobInfo) {
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(os.Stderr, "job %d: %s, %d removed, %d skipped, cursor %q\n", j.ID, j.State, j.Removed, j.Skipped, j.Cursor)
		}
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return j, fmt.Errorf("rm --wait: job %d still %s after %v (%d removed); it goes on: operator jobs", id, j.State, d, j.Removed)
		}
		return j, fmt.Errorf("rm --wait: %w", err)
	}
	took, out := time.Since(start), os.Stderr
	if text {
		out = os.Stdout
	}
	fmt.Fprintf(out, "job %d %s: %d removed, %d skipped in %v (%.0f keys/s)\n", j.ID, j.State, j.Removed, j.Skipped, took.Round(time.Millisecond), float64(j.Removed)/took.Seconds())
	if j.State != api.JobDone {
		return j, fmt.Errorf("rm --wait: job %d was %s", j.ID, j.State)
	}
	return j, nil
}

func runJobs(e *env, _ []string) error {
	var resp api.JobListResponse
	if err := e.call(api.MethodJobList, &api.Empty{}, &resp); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	out := jsonout.Jobs{Jobs: []jsonout.Job{}, Index: resp.Index}
	for _, j := range resp.Jobs {
		out.Jobs = append(out.Jobs, jsonout.JobOf(j))
	}
	return e.output(out, func() error {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPREFIX\tSTATE\tREMOVED\tSKIPPED\tCURSOR\tCREATED")
		for _, j := range resp.Jobs {
			fmt.Fprintf(tw, "%d\t%q\t%s\t%d\t%d\t%q\t%s\n", j.ID, j.Prefix, j.State, j.Removed, j.Skipped, j.Cursor,
				time.Unix(0, j.Created).UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	})
}

func runJobsCancel(e *env, args []string) error {
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil || id == 0 {
		return usagef("operator jobs cancel: %q is not a job id", args[0])
	}
	cl, err := e.client()
	if err != nil {
		return err
	}
	j, err := cl.CancelJob(context.Background(), id)
	if err != nil {
		return fmt.Errorf("jobs cancel %d: %w", id, err)
	}
	fmt.Printf("job %d %s: %d removed, %d skipped, cursor %q\n", j.ID, j.State, j.Removed, j.Skipped, j.Cursor)
	return nil
}
