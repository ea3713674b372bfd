package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/jsonout"
	"sexton/snapshot"
)

func runRaftListPeers(e *env, _ []string) error {
	var resp api.RaftPeersResponse
	if err := e.call(api.MethodRaftPeers, &api.Empty{}, &resp); err != nil {
		return fmt.Errorf("list-peers: %w", err)
	}
	return e.output(jsonout.NonNil(resp.Peers), func() error {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tSUFFRAGE\tLEADER")
		for _, p := range resp.Peers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", p.ID, p.Address, p.Suffrage, p.Leader)
		}
		return tw.Flush()
	})
}

func runRaftAddVoter(e *env, args []string) error {
	if err := e.call(api.MethodRaftAddVoter, &api.RaftPeerRequest{ID: args[0], Address: args[1]}, nil); err != nil {
		return fmt.Errorf("add-voter %s: %w", args[0], err)
	}
	fmt.Printf("added voter %s at %s\n", args[0], args[1])
	return nil
}

func runRaftRemovePeer(e *env, args []string) error {
	if err := e.call(api.MethodRaftRemovePeer, &api.RaftPeerRequest{ID: args[0]}, nil); err != nil {
		return fmt.Errorf("remove-peer %s: %w", args[0], err)
	}
	fmt.Printf("removed peer %s\n", args[0])
	return nil
}

func runRaftTransfer(e *env, args []string) error {
	id := ""
	if len(args) == 1 {
		id = args[0]
	}
	if err := e.call(api.MethodRaftTransferLeadership, &api.RaftPeerRequest{ID: id}, nil); err != nil {
		return fmt.Errorf("transfer-leader: %w", err)
	}
	fmt.Println("leadership transferred")
	return nil
}

// runSnapshotSave fetches the leader's snapshot in chunks into FILE.tmp
// and renames it to FILE once complete and synced. The file is the
// owner's only (0600): a snapshot holds the cluster's grant key
// (docs/SECURITY.md, "What snapshots contain").
func runSnapshotSave(e *env, args []string) error {
	file := args[0]
	tmp := file + ".tmp"
	// A leftover FILE.tmp keeps its mode through O_TRUNC: start anew.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("snapshot save: %w", err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	prog := progressTo.New("snapshot save "+file, -1, "")
	cl, err := e.client()
	var n int64
	if err == nil {
		n, err = cl.SaveSnapshot(f, e.timeout+time.Second, prog)
	}
	if err != nil {
		f.Close()
		prog.Abort()
		return fmt.Errorf("snapshot save: %w", err)
	}
	prog.Finish()
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		return err
	}
	fmt.Printf("saved snapshot to %s (%d bytes)\n", file, n)
	return nil
}

// setupSnapshotRestore checks FILE, then sends it in chunks; each chunk
// may take up to five minutes (the last one installs the state). The last
// chunk carries --allow-rollback: the leader refuses a file older than its
// applied index without it.
func setupSnapshotRestore(fs *flag.FlagSet) runFunc {
	allowRollback := fs.Bool("allow-rollback", false, "install FILE even when its index is below the cluster's applied index: puts made after it are lost, removes made after it are undone until the holders' ghost check drops those keys again")
	return func(e *env, args []string) error {
		file := args[0]
		f, _, _, err := openSnapshot(file, func(err error) error { return fmt.Errorf("snapshot restore: refusing %s: %w", file, err) })
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		cl, err := e.client()
		if err != nil {
			return err
		}
		size := int64(-1)
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		prog := progressTo.New("snapshot restore "+file, size, "")
		resp, err := cl.RestoreSnapshot(f, max(e.timeout, 5*time.Minute)+time.Second, *allowRollback, prog)
		if err != nil {
			prog.Abort()
			return fmt.Errorf("snapshot restore: %w", err)
		}
		prog.Finish()
		fmt.Printf("restored %s (format %s): %d objects, %d segments, %d tasks; master epoch %d\n", file, resp.Format, resp.Objects, resp.Segments, resp.Tasks, resp.MasterEpoch)
		return nil
	}
}

// openSnapshot opens a snapshot file and reads its header and counts
// (snapshot.Inspect checks it through); a file that does not pass is
// closed and the failure returned through refused.
func openSnapshot(file string, refused func(error) error) (*os.File, snapshot.Header, snapshot.Counts, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, snapshot.Header{}, snapshot.Counts{}, err
	}
	h, c, err := snapshot.Inspect(f)
	if err != nil {
		f.Close()
		return nil, h, c, refused(err)
	}
	return f, h, c, nil
}

func runSnapshotInspect(e *env, args []string) error {
	file := args[0]
	f, h, c, err := openSnapshot(file, func(err error) error { return fmt.Errorf("inspect %s: %w", file, err) })
	if err != nil {
		return err
	}
	f.Close()
	return e.output(jsonout.SnapshotInspect{Format: h.Format, ClusterID: h.ClusterID, LastIndex: h.LastIndex, LastTerm: h.LastTerm,
		Created: h.Created, Objects: c.Objects, Segments: c.Segments, Tasks: c.Tasks, DFSRecords: c.DFSRecords, Sessions: c.Sessions, Jobs: c.Jobs, HasState: c.HasState}, func() error {
		fmt.Printf("format:     %s\ncluster id: %016x\nlast index: %d\nlast term:  %d\ncreated:    %s\nobjects:    %d\nsegments:   %d\ntasks:      %d\ndfs records: %d\nsessions:   %d\njobs:       %d\nstate:      %v\n",
			h.Format, h.ClusterID, h.LastIndex, h.LastTerm, time.Unix(0, h.Created).UTC().Format(time.RFC3339), c.Objects, c.Segments, c.Tasks, c.DFSRecords, c.Sessions, c.Jobs, c.HasState)
		return nil
	})
}

func setupTasks(fs *flag.FlagSet) runFunc {
	seg := fs.String("segment", "", "only this segment")
	limit := fs.Int("limit", 1000, "at most this many")
	return func(e *env, _ []string) error {
		var resp api.ListTasksResponse
		if err := e.call(api.MethodListTasks, &api.ListTasksRequest{Segment: api.SegmentID(*seg), Limit: *limit}, &resp); err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
		now := time.Now()
		out := jsonout.TasksOf(resp, now)
		return e.output(out, func() error {
			tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSEGMENT\tKEY\tINCARNATION\tAGE\tSTATE\tATTEMPTS\tHOLDER\tLAST ERROR")
			for _, t := range out.Tasks {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, t.Segment, t.Key, t.Incarnation, fmtAge(t.Created, now), taskState(t), t.Attempts, orDash(t.Holder), orDash(t.LastError))
			}
			fmt.Fprintf(tw, "total\t%d\n", resp.Total)
			return tw.Flush()
		})
	}
}

func runSegments(e *env, _ []string) error {
	var resp api.ListSegmentsResponse
	if err := e.call(api.MethodListSegments, &api.Empty{}, &resp); err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	return e.output(jsonout.Segments(resp.Segments, resp.Refused), func() error {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEGMENT\tCLIENT\tPOOL\tEPOCH\tMOUNTED\tRETIRED\tENDPOINT\tTASKS")
		for _, s := range resp.Segments {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%v\t%s\t%d\n", s.ID, s.ClientID, s.Pool, s.MountEpoch, s.Mounted, s.Retired, s.Endpoint, s.PendingTasks)
		}
		for _, r := range resp.Refused {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\tREFUSED\t-\t%s\t-\n", r.Segment, r.ClientID, r.Pool, r.Endpoint)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printRefusedMounts(resp.Refused)
		return nil
	})
}

func setupRetire(fs *flag.FlagSet) runFunc {
	by := fs.String("by", os.Getenv("USER"), "who retires it (audited)")
	reason := fs.String("reason", "", "why (audited)")
	return func(e *env, args []string) error {
		seg := args[0]
		var resp api.AckTasksResponse
		if err := e.call(api.MethodRetireStorage, &api.RetireStorageRequest{Segment: api.SegmentID(seg), By: *by, Reason: *reason}, &resp); err != nil {
			return fmt.Errorf("retire %s: %w", seg, err)
		}
		fmt.Printf("retired %s: %d pending tasks dropped\n", seg, resp.Dropped)
		return nil
	}
}

// printRefusedMounts explains, below a table, each late holder the
// leader refused: it waits for an operator's decision.
func printRefusedMounts(refused []api.RefusedMount) {
	for _, r := range refused {
		marker := "not reported (an older holder build)"
		if r.MarkerCluster != nil {
			marker = fmt.Sprintf("%016x", *r.MarkerCluster)
		}
		fmt.Printf("refused mount: segment %s at %s (pool %s, marker cluster %s), %d attempts, last %s: %s\n",
			r.Segment, r.Endpoint, r.Pool, marker, r.Attempts, time.Unix(0, r.LastAttempt).UTC().Format(time.RFC3339), r.Reason)
	}
}
