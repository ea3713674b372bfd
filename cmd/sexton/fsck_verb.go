package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"sexton/fsck"
)

// runFsck compares the leader's metadata with every mounted holder's
// scan. It only reads. Writes that race with it can show up as a
// transient orphan or missing replica; run it again to confirm.
func runFsck(e *env, _ []string) error {
	rep, err := fsck.Run(fsck.Env{Call: e.call, ClientConfig: e.clientConfig, Progress: func(what string, total int64, unit string) fsck.Progress {
		return progressTo.New(what, total, unit)
	}})
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	if err := e.output(rep, func() error { printFsck(rep); return nil }); err != nil {
		return err
	}
	if !rep.Clean {
		return fmt.Errorf("fsck: orphans, missing replicas or unreachable holders found")
	}
	return nil
}

func printFsck(rep *fsck.Report) {
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEGMENT\tENDPOINT\tLIVE\tORPHANS\tMISSING\tTASKS\tDEAD BYTES\tUSED BYTES")
	for _, s := range rep.Segments {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Segment, s.Endpoint, s.LiveOnHolder, len(s.Orphans), len(s.Missing), s.PendingTasks, s.DeadBytes, s.UsedBytes)
	}
	_ = tw.Flush()
	for _, s := range rep.Segments {
		if s.Error != "" {
			fmt.Printf("%s: unreachable: %s\n", s.Segment, s.Error)
		}
		for _, r := range s.Orphans {
			fmt.Printf("%s: orphan %s %s\n", s.Segment, r.Key, r.Incarnation)
		}
		for _, r := range s.Missing {
			fmt.Printf("%s: missing replica %s %s\n", s.Segment, r.Key, r.Incarnation)
		}
	}
	fmt.Printf("%d objects, %d pending tasks: %s\n", rep.Objects, rep.Tasks, map[bool]string{true: "clean", false: "PROBLEMS FOUND"}[rep.Clean])
}
