package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/snapshot"
)

func runOperator(args []string) error {
	if len(args) == 0 {
		return usagef("operator raft|snapshot|tasks|segments|retire|fsck|dfs|settings ...")
	}
	switch args[0] {
	case "raft":
		return runOperatorRaft(args[1:])
	case "snapshot":
		return runOperatorSnapshot(args[1:])
	case "tasks":
		return runOperatorTasks(args[1:])
	case "segments":
		return runOperatorSegments(args[1:])
	case "retire":
		return runOperatorRetire(args[1:])
	case "fsck":
		return runFsck(args[1:])
	case "dfs":
		return runOperatorDFS(args[1:])
	case "settings":
		return runOperatorSettings(args[1:])
	}
	return usagef("unknown operator command %q", args[0])
}

func runOperatorRaft(args []string) error {
	if len(args) == 0 {
		return usagef("operator raft list-peers | add-voter ID RAFT_ADDR | remove-peer ID | transfer-leader [ID]")
	}
	var cf clientFlags
	fs := newFlags("operator raft " + args[0])
	cf.register(fs, args[0] == "list-peers")
	if err := parseFlags(fs, args[1:]); err != nil {
		return usagef("%v", err)
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	switch args[0] {
	case "list-peers":
		var resp api.RaftPeersResponse
		if err := call(cl, &cf, api.MethodRaftPeers, &api.Empty{}, &resp); err != nil {
			return fmt.Errorf("list-peers: %w", err)
		}
		if cf.json {
			return printJSON(resp.Peers)
		}
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tSUFFRAGE\tLEADER")
		for _, p := range resp.Peers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", p.ID, p.Address, p.Suffrage, p.Leader)
		}
		return tw.Flush()
	case "add-voter":
		if fs.NArg() != 2 {
			return usagef("operator raft add-voter ID RAFT_ADDR")
		}
		if err := call(cl, &cf, api.MethodRaftAddVoter, &api.RaftPeerRequest{ID: fs.Arg(0), Address: fs.Arg(1)}, nil); err != nil {
			return fmt.Errorf("add-voter %s: %w", fs.Arg(0), err)
		}
		fmt.Printf("added voter %s at %s\n", fs.Arg(0), fs.Arg(1))
	case "remove-peer":
		if fs.NArg() != 1 {
			return usagef("operator raft remove-peer ID")
		}
		if err := call(cl, &cf, api.MethodRaftRemovePeer, &api.RaftPeerRequest{ID: fs.Arg(0)}, nil); err != nil {
			return fmt.Errorf("remove-peer %s: %w", fs.Arg(0), err)
		}
		fmt.Printf("removed peer %s\n", fs.Arg(0))
	case "transfer-leader":
		if fs.NArg() > 1 {
			return usagef("operator raft transfer-leader [ID]")
		}
		if err := call(cl, &cf, api.MethodRaftTransfer, &api.RaftPeerRequest{ID: fs.Arg(0)}, nil); err != nil {
			return fmt.Errorf("transfer-leader: %w", err)
		}
		fmt.Println("leadership transferred")
	default:
		return usagef("unknown raft command %q", args[0])
	}
	return nil
}

func runOperatorSnapshot(args []string) error {
	if len(args) == 0 {
		return usagef("operator snapshot save FILE | restore FILE | inspect FILE")
	}
	sub := args[0]
	var cf clientFlags
	fs := newFlags("operator snapshot " + sub)
	cf.register(fs, sub == "inspect")
	if err := parseFlags(fs, args[1:]); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return usagef("operator snapshot %s FILE", sub)
	}
	file := fs.Arg(0)
	switch sub {
	case "inspect":
		return inspectSnapshot(file, cf.json)
	case "save":
		cl, err := cf.cluster()
		if err != nil {
			return err
		}
		defer cl.Close()
		tmp := file + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		defer os.Remove(tmp)
		req := api.SnapshotChunkRequest{}
		for {
			var chunk api.SnapshotChunk
			if err := call(cl, &cf, api.MethodSnapshotSave, &req, &chunk); err != nil {
				f.Close()
				return fmt.Errorf("snapshot save: %w", err)
			}
			if _, err := f.Write(chunk.Data); err != nil {
				f.Close()
				return fmt.Errorf("snapshot save: %w", err)
			}
			req = api.SnapshotChunkRequest{ID: chunk.ID, Offset: chunk.Offset + int64(len(chunk.Data))}
			if chunk.EOF {
				break
			}
		}
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
		fmt.Printf("saved snapshot to %s (%d bytes)\n", file, req.Offset)
		return nil
	case "restore":
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, _, err := snapshot.Inspect(f); err != nil {
			return fmt.Errorf("snapshot restore: refusing %s: %w", file, err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		cl, err := cf.cluster()
		if err != nil {
			return err
		}
		defer cl.Close()
		var idb [8]byte
		_, _ = rand.Read(idb[:])
		id := hex.EncodeToString(idb[:])
		buf := make([]byte, api.SnapshotChunkSize)
		var off int64
		for {
			nr, rerr := io.ReadFull(f, buf)
			eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
			if rerr != nil && !eof {
				return rerr
			}
			var resp api.SnapshotRestoreResponse
			cf2 := cf
			cf2.timeout = max(cf.timeout, 5*time.Minute)
			if err := call(cl, &cf2, api.MethodSnapshotRestore, &api.SnapshotChunk{ID: id, Offset: off, Data: buf[:nr], EOF: eof}, &resp); err != nil {
				return fmt.Errorf("snapshot restore: %w", err)
			}
			off += int64(nr)
			if eof {
				fmt.Printf("restored %s (format %s): %d objects, %d segments, %d tasks; master epoch %d\n", file, resp.Format, resp.Objects, resp.Segments, resp.Tasks, resp.MasterEpoch)
				return nil
			}
		}
	}
	return usagef("unknown snapshot command %q", sub)
}

func inspectSnapshot(file string, asJSON bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h, c, err := snapshot.Inspect(f)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", file, err)
	}
	if asJSON {
		return printJSON(map[string]any{"format": h.Format, "cluster_id": h.ClusterID, "last_index": h.LastIndex, "last_term": h.LastTerm,
			"created": h.Created, "objects": c.Objects, "segments": c.Segments, "tasks": c.Tasks, "dfs_records": c.DFSRecords})
	}
	fmt.Printf("format:     %s\ncluster id: %016x\nlast index: %d\nlast term:  %d\ncreated:    %s\nobjects:    %d\nsegments:   %d\ntasks:      %d\ndfs records: %d\n",
		h.Format, h.ClusterID, h.LastIndex, h.LastTerm, time.Unix(0, h.Created).UTC().Format(time.RFC3339), c.Objects, c.Segments, c.Tasks, c.DFSRecords)
	return nil
}

func runOperatorTasks(args []string) error {
	var cf clientFlags
	fs := newFlags("operator tasks")
	cf.register(fs, true)
	seg := fs.String("segment", "", "only this segment")
	limit := fs.Int("limit", 1000, "at most this many")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	var resp api.ListTasksResponse
	if err := call(cl, &cf, api.MethodListTasks, &api.ListTasksRequest{Segment: api.SegmentID(*seg), Limit: *limit}, &resp); err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	if cf.json {
		return printJSON(resp)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSEGMENT\tKEY\tINCARNATION\tCREATED")
	for _, t := range resp.Tasks {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", t.ID, t.Segment, t.Key, t.Incarnation, time.Unix(0, t.Created).UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "total\t%d\n", resp.Total)
	return tw.Flush()
}

func runOperatorSegments(args []string) error {
	var cf clientFlags
	fs := newFlags("operator segments")
	cf.register(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	var resp api.ListSegmentsResponse
	if err := call(cl, &cf, api.MethodListSegments, &api.Empty{}, &resp); err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	if cf.json {
		return printJSON(resp.Segments)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEGMENT\tCLIENT\tPOOL\tEPOCH\tMOUNTED\tRETIRED\tENDPOINT\tTASKS")
	for _, s := range resp.Segments {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%v\t%s\t%d\n", s.ID, s.ClientID, s.Pool, s.MountEpoch, s.Mounted, s.Retired, s.Endpoint, s.PendingTasks)
	}
	return tw.Flush()
}

func runOperatorRetire(args []string) error {
	var cf clientFlags
	fs := newFlags("operator retire")
	cf.register(fs, false)
	by := fs.String("by", os.Getenv("USER"), "who retires it (audited)")
	reason := fs.String("reason", "", "why (audited)")
	seg, err := parseWithKey(fs, args, "operator retire SEGMENT --by WHO --reason WHY")
	if err != nil {
		return err
	}
	cl, err := cf.cluster()
	if err != nil {
		return err
	}
	defer cl.Close()
	var resp api.AckTasksResponse
	if err := call(cl, &cf, api.MethodRetireStorage, &api.RetireStorageRequest{Segment: api.SegmentID(seg), By: *by, Reason: *reason}, &resp); err != nil {
		return fmt.Errorf("retire %s: %w", seg, err)
	}
	fmt.Printf("retired %s: %d pending tasks dropped\n", seg, resp.Dropped)
	return nil
}
