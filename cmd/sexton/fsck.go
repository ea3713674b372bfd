package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"sexton/api"
	"sexton/transport"
)

// fsckSegment is what fsck found for one segment.
type fsckSegment struct {
	Segment      api.SegmentID `json:"segment"`
	Endpoint     string        `json:"endpoint"`
	Reachable    bool          `json:"reachable"`
	Error        string        `json:"error,omitempty"`
	LiveOnHolder int           `json:"live_on_holder"`
	Orphans      []refOut      `json:"orphans"`          // live on the holder, not live in the master, no pending task
	Missing      []refOut      `json:"missing_replicas"` // the master's replica, absent from the holder
	PendingTasks int           `json:"pending_tasks"`
	DeadBytes    int64         `json:"dead_bytes"`
	UsedBytes    int64         `json:"used_bytes"`
}

type fsckReport struct {
	Objects  int           `json:"objects"`
	Tasks    int           `json:"pending_tasks"`
	Segments []fsckSegment `json:"segments"`
	Clean    bool          `json:"clean"`
}

// setupFsck compares the leader's metadata with every mounted holder's
// scan. It only reads. Writes that race with it can show up as a
// transient orphan or missing replica; run it again to confirm.
func setupFsck(*flag.FlagSet) runFunc {
	return func(e *env, _ []string) error {
		rep, err := fsck(e)
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
}

func printFsck(rep *fsckReport) {
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

func fsck(e *env) (*fsckReport, error) {
	var segs api.ListSegmentsResponse
	if err := e.call(api.MethodListSegments, &api.Empty{}, &segs); err != nil {
		return nil, err
	}
	var tasks api.ListTasksResponse
	if err := e.call(api.MethodListTasks, &api.ListTasksRequest{Limit: 1 << 30}, &tasks); err != nil {
		return nil, err
	}
	taskOf := map[api.SegmentID]map[api.ObjectRef]bool{}
	for _, t := range tasks.Tasks {
		if taskOf[t.Segment] == nil {
			taskOf[t.Segment] = map[api.ObjectRef]bool{}
		}
		taskOf[t.Segment][api.ObjectRef{Key: t.Key, Incarnation: t.Incarnation}] = true
	}
	expected := map[api.SegmentID]map[api.ObjectRef]bool{}
	rep := &fsckReport{Tasks: tasks.Total, Segments: []fsckSegment{}, Clean: true}
	cursor := ""
	for {
		var page api.ListResponse
		if err := e.call(api.MethodList, &api.ListRequest{Cursor: cursor, Limit: 1000}, &page); err != nil {
			return nil, err
		}
		for _, o := range page.Objects {
			rep.Objects++
			for _, r := range o.Replicas {
				if r.Kind != api.ReplicaLocalDisk {
					continue
				}
				if expected[r.Segment] == nil {
					expected[r.Segment] = map[api.ObjectRef]bool{}
				}
				expected[r.Segment][api.ObjectRef{Key: o.Key, Incarnation: o.Incarnation}] = true
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	cc, err := e.clientConfig()
	if err != nil {
		return nil, err
	}
	pool := transport.NewPool(cc)
	defer pool.Close()
	scan := 0
	for _, seg := range segs.Segments {
		if seg.Mounted && !seg.Retired {
			scan++
		}
	}
	prog := newProgress("fsck", int64(scan), "holders")
	for _, seg := range segs.Segments {
		if !seg.Mounted || seg.Retired {
			continue
		}
		fs := fsckSegment{Segment: seg.ID, Endpoint: seg.Endpoint, PendingTasks: seg.PendingTasks, Orphans: []refOut{}, Missing: []refOut{}}
		refs, st, err := scanHolder(pool, seg.Endpoint)
		if err != nil {
			fs.Error = err.Error()
			rep.Clean = false
			rep.Segments = append(rep.Segments, fs)
			prog.add(1)
			continue
		}
		fs.Reachable, fs.LiveOnHolder, fs.DeadBytes, fs.UsedBytes = true, len(refs), st.DeadBytes, st.UsedBytes
		onHolder := map[api.ObjectRef]bool{}
		for _, r := range refs {
			onHolder[r] = true
		}
		// What the master does not count as live: ask it (the same query a
		// holder's reconcile uses, so pending puts count as live).
		for start := 0; start < len(refs); start += api.MaxReconcilePage {
			page := refs[start:min(start+api.MaxReconcilePage, len(refs))]
			var rr api.ReconcileResponse
			if err := e.call(api.MethodReconcileLocalDiskObjects, &api.ReconcileRequest{Segment: seg.ID, MountEpoch: seg.MountEpoch, Objects: page}, &rr); err != nil {
				prog.abort()
				return nil, err
			}
			for _, r := range rr.NotLive {
				if !taskOf[seg.ID][r] {
					fs.Orphans = append(fs.Orphans, refOut{Key: r.Key, Incarnation: r.Incarnation.String()})
				}
			}
		}
		for r := range expected[seg.ID] {
			if !onHolder[r] {
				fs.Missing = append(fs.Missing, refOut{Key: r.Key, Incarnation: r.Incarnation.String()})
			}
		}
		sort.Slice(fs.Missing, func(i, j int) bool { return fs.Missing[i].Key < fs.Missing[j].Key })
		if len(fs.Orphans) > 0 || len(fs.Missing) > 0 {
			rep.Clean = false
		}
		rep.Segments = append(rep.Segments, fs)
		prog.add(1)
	}
	prog.finish()
	return rep, nil
}

func scanHolder(pool *transport.Pool, addr string) ([]api.ObjectRef, api.HolderStatusResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var st api.HolderStatusResponse
	if err := pool.Call(ctx, addr, api.MethodHolderStatus, &api.Empty{}, &st); err != nil {
		return nil, st, err
	}
	var refs []api.ObjectRef
	req := api.HolderScanRequest{Limit: api.MaxReconcilePage}
	for {
		var page api.HolderScanResponse
		if err := pool.Call(ctx, addr, api.MethodHolderScan, &req, &page); err != nil {
			return nil, st, err
		}
		refs = append(refs, page.Refs...)
		if !page.More || len(page.Refs) == 0 {
			return refs, st, nil
		}
		req.After = page.Refs[len(page.Refs)-1]
	}
}
