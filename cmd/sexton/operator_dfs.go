package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"sexton/api"
)

// runOperatorDFS is `sexton operator dfs status | set-max-buckets N`.
func runOperatorDFS(args []string) error {
	if len(args) == 0 {
		return usagef("operator dfs status [--json] | set-max-buckets N")
	}
	var cf clientFlags
	fs := newFlags("operator dfs " + args[0])
	cf.register(fs, args[0] == "status")
	if err := parseFlags(fs, args[1:]); err != nil {
		return usagef("%v", err)
	}
	switch args[0] {
	case "status":
		if fs.NArg() != 0 {
			return usagef("operator dfs status [--json]")
		}
	case "set-max-buckets":
		if fs.NArg() != 1 {
			return usagef("operator dfs set-max-buckets N")
		}
	default:
		return usagef("unknown operator dfs command %q", args[0])
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	if args[0] == "set-max-buckets" {
		n, err := strconv.Atoi(fs.Arg(0))
		if err != nil {
			return usagef("set-max-buckets: %q is not a number", fs.Arg(0))
		}
		if err := call(cl, &cf, api.MethodDFSSetMaxBuckets, &api.DFSSetMaxBucketsRequest{Max: n}, &api.Empty{}); err != nil {
			return fmt.Errorf("dfs set-max-buckets: %w", err)
		}
		fmt.Printf("dfs: max buckets set to %d\n", n)
		return nil
	}
	var st api.DFSStatusResponse
	if err := call(cl, &cf, api.MethodDFSStatus, &api.Empty{}, &st); err != nil {
		return fmt.Errorf("dfs status: %w", err)
	}
	if cf.json {
		return printJSON(st)
	}
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
