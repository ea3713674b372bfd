package fsck

import (
	"context"
	"sort"
	"time"

	"sexton/api"
	"sexton/internal/progress"
	"sexton/transport"
)

// Segment is what fsck found for one segment.
type Segment struct {
	Segment      api.SegmentID `json:"segment"`
	Endpoint     string        `json:"endpoint"`
	Reachable    bool          `json:"reachable"`
	Error        string        `json:"error,omitempty"`
	LiveOnHolder int           `json:"live_on_holder"`
	Orphans      []Ref         `json:"orphans"`          // live on the holder, not live in the master, no pending task
	Missing      []Ref         `json:"missing_replicas"` // the master's replica, absent from the holder
	PendingTasks int           `json:"pending_tasks"`
	DeadBytes    int64         `json:"dead_bytes"`
	UsedBytes    int64         `json:"used_bytes"`
}

// Report is what fsck found: the leader's object and task counts, each
// mounted segment's comparison, and whether nothing is amiss. Its JSON
// is `sexton fsck --json` (docs/CLI.md).
type Report struct {
	Objects  int       `json:"objects"`
	Tasks    int       `json:"pending_tasks"`
	Segments []Segment `json:"segments"`
	Clean    bool      `json:"clean"`
}

// Ref is one incarnation of one key (an orphan or a missing replica).
type Ref struct {
	Key         string `json:"key"`
	Incarnation string `json:"incarnation"`
}

// Env is what fsck runs with, given by the command line.
type Env struct {
	// Call calls a master method, following the leader, within the
	// command's timeout.
	Call func(method string, req, resp any) error
	// ClientConfig is the transport configuration for the holders.
	ClientConfig func() (transport.ClientConfig, error)
	// Progress starts reporting the scan of total holders; nil reports
	// nothing.
	Progress func(what string, total int64, unit string) Progress
}

// Progress is the holder scan's progress report.
type Progress = progress.Reporter

// Run compares the leader's metadata with every mounted holder's scan.
// It only reads. Writes that race with it can show up as a transient
// orphan or missing replica; run it again to confirm.
func Run(e Env) (*Report, error) {
	var segs api.ListSegmentsResponse
	if err := e.Call(api.MethodListSegments, &api.Empty{}, &segs); err != nil {
		return nil, err
	}
	var tasks api.ListTasksResponse
	if err := e.Call(api.MethodListTasks, &api.ListTasksRequest{Limit: 1 << 30}, &tasks); err != nil {
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
	rep := &Report{Tasks: tasks.Total, Segments: []Segment{}, Clean: true}
	cursor := ""
	for {
		var page api.ListResponse
		if err := e.Call(api.MethodList, &api.ListRequest{Cursor: cursor, Limit: 1000}, &page); err != nil {
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
	cc, err := e.ClientConfig()
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
	var prog Progress = progress.Nothing{}
	if e.Progress != nil {
		prog = e.Progress("fsck", int64(scan), "holders")
	}
	for _, seg := range segs.Segments {
		if !seg.Mounted || seg.Retired {
			continue
		}
		fs := Segment{Segment: seg.ID, Endpoint: seg.Endpoint, PendingTasks: seg.PendingTasks, Orphans: []Ref{}, Missing: []Ref{}}
		refs, st, err := scanHolder(pool, seg.Endpoint)
		if err != nil {
			fs.Error = err.Error()
			rep.Clean = false
			rep.Segments = append(rep.Segments, fs)
			prog.Add(1)
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
			if err := e.Call(api.MethodReconcileLocalDiskObjects, &api.ReconcileRequest{Segment: seg.ID, MountEpoch: seg.MountEpoch, Objects: page}, &rr); err != nil {
				prog.Abort()
				return nil, err
			}
			for _, r := range rr.NotLive {
				if !taskOf[seg.ID][r] {
					fs.Orphans = append(fs.Orphans, Ref{Key: r.Key, Incarnation: r.Incarnation.String()})
				}
			}
		}
		for r := range expected[seg.ID] {
			if !onHolder[r] {
				fs.Missing = append(fs.Missing, Ref{Key: r.Key, Incarnation: r.Incarnation.String()})
			}
		}
		sort.Slice(fs.Missing, func(i, j int) bool { return fs.Missing[i].Key < fs.Missing[j].Key })
		if len(fs.Orphans) > 0 || len(fs.Missing) > 0 {
			rep.Clean = false
		}
		rep.Segments = append(rep.Segments, fs)
		prog.Add(1)
	}
	prog.Finish()
	return rep, nil
}

// scanHolder reads a holder's status and every live reference it holds.
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
