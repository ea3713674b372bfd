package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"sexton/api"
	"sexton/jsonout"
)

func runDFSSetMaxBuckets(e *env, args []string) error {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return usagef("set-max-buckets: %q is not a number", args[0])
	}
	if err := e.call(api.MethodDFSSetMaxBuckets, &api.DFSSetMaxBucketsRequest{Max: n}, &api.Empty{}); err != nil {
		return fmt.Errorf("dfs set-max-buckets: %w", err)
	}
	fmt.Printf("dfs: max buckets set to %d\n", n)
	return nil
}

func runDFSStatus(e *env, _ []string) error {
	var st api.DFSStatusResponse
	if err := e.call(api.MethodDFSStatus, &api.Empty{}, &st); err != nil {
		return fmt.Errorf("dfs status: %w", err)
	}
	st.Env, st.Units, st.StrayFiles = jsonout.NonNil(st.Env), jsonout.NonNil(st.Units), jsonout.NonNil(st.StrayFiles)
	return e.output(st, func() error { return printDFSStatus(st) })
}

func printDFSStatus(st api.DFSStatusResponse) error {
	if !st.Enabled || st.Allocator == "" {
		fmt.Printf("dfs: not configured (root %q)\n", st.Root)
		return nil
	}
	fmt.Printf("root:              %s (adapter %s)\nallocator:         %s\ncapacity:          %d\nused:              %d\nlive bytes:        %d\ntombstoned/deferred bytes: %d\nentries:           %d\n",
		st.Root, st.Adapter, st.Allocator, st.Capacity, st.Used, st.LiveBytes, st.DeadBytes, st.Entries)
	if st.Allocator == "bucket" {
		fmt.Printf("buckets:           %d charged of max %d (next id %d)\n", st.ChargedBuckets, st.MaxBuckets, st.NextBucketID)
	}
	fmt.Printf("pending deletions: %d\nevicted:           %d\naborted:           %d\nlost:              %d\n", st.PendingDeletions, st.Evicted, st.Aborted, st.Lost)
	if len(st.StrayFiles) > 0 {
		fmt.Printf("stray files:       %s\n", strings.Join(st.StrayFiles, ", "))
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UNIT\tPATH\tSTATE\tFILE\tUSED\tLIVE\tDEAD\tENTRIES\tPENDING\tDELETE_FAILURES")
	for _, u := range st.Units {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", u.Unit, u.Path, u.State, u.File, u.Used, u.LiveBytes, u.DeadBytes, u.Entries, u.PendingEntries, u.DeleteFailures)
	}
	return tw.Flush()
}
