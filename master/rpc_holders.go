package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// maxFetchWait bounds a long poll so a holder notices a leader change.
const maxFetchWait = 30 * time.Second

// maxListTasks bounds one ListTasks answer (about 100 bytes a task).
const maxListTasks = 20000

func (n *Node) handleMount(_ context.Context, req *api.MountLocalDiskRequest) (*api.MountLocalDiskResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if req.ClientID == "" || req.Segment == "" {
		return nil, api.Errorf(api.CodeInvalidParams, "mount needs a client id and a segment id")
	}
	r, err := proposeFor[fsm.MountResult](n, &fsm.MountLocalDisk{V: fsm.MountLocalDiskV2, ClientID: req.ClientID, Segment: req.Segment,
		Pool: req.Pool, Capacity: req.Capacity, Capabilities: req.Capabilities, Endpoint: req.Endpoint, Process: req.Process,
		MarkerCluster: req.MarkerCluster})
	// An identical repeat is answered with the current epoch, not refused.
	already := r != nil && api.CodeOf(err) == api.CodeSegmentAlreadyExists
	if api.CodeOf(err) == api.CodeSegmentNeedsAdoption {
		// A late holder of a rebuilt cluster's lost cluster: remembered so
		// the operator sees it waiting for adoption or retirement.
		n.refused.note(req, err.Error(), time.Now())
		n.log.Warn("refused the mount of a late holder of the rebuilt cluster", "segment", req.Segment, "endpoint", req.Endpoint, "error", err)
		return nil, err
	}
	if err != nil && !already {
		return nil, err
	}
	n.refused.forget(req.Segment)
	n.soft.Heartbeat(req.Segment, 0, req.Capacity, 0, time.Now())
	// The grant key lets the holder check write grants without asking
	// (invariant 11); every leader of the cluster signs with this one.
	return &api.MountLocalDiskResponse{MountEpoch: r.MountEpoch, MasterEpoch: r.MasterEpoch, ClusterID: r.ClusterID,
		AlreadyMounted: already, GrantKey: n.fsm.GrantKey()}, nil
}

func (n *Node) handleUnmount(_ context.Context, req *api.UnmountLocalDiskRequest) (*api.Empty, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if _, err := proposeFor[fsm.UnmountResult](n, &fsm.UnmountLocalDisk{V: fsm.UnmountLocalDiskV1, Segment: req.Segment, Epoch: req.MountEpoch}); err != nil {
		return nil, err
	}
	n.soft.Forget(req.Segment)
	return &api.Empty{}, nil
}

// handleHeartbeat records liveness and tells the holder whether its mount
// is still the current one.
func (n *Node) handleHeartbeat(_ context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	out := &api.HeartbeatResponse{MasterEpoch: n.fsm.Stats().MasterEpoch}
	seg, ok := n.fsm.Segment(req.Segment)
	if !ok || !seg.Mounted || seg.MountEpoch != req.MountEpoch || seg.ClientID != req.ClientID {
		out.Remount = true
		return out, nil
	}
	// The segment ids go only to a holder whose recorded set differs: the
	// holder keeps them for a rebuild after the masters are lost.
	if ids, digest := n.segmentSet(); digest != req.KnownSegments && len(ids) <= api.MaxRebuildSegmentsKnown {
		out.Segments, out.ClusterID = ids, n.fsm.Stats().ClusterID
	}
	n.soft.Heartbeat(req.Segment, req.Used, req.Capacity, req.DeadBytes, time.Now())
	return out, nil
}

// handleFetchTasks returns pending tasks for the segment. With WaitMillis
// it long-polls: it returns as soon as an applied entry makes tasks of the
// segment fetchable (fsm.Wake), or a withheld task's lease or backoff
// ends, or when the wait ends. It never removes a task.
//
// Tasks of an incarnation under a read lease are withheld (a reader may
// still be reading that copy: deleting it would make a Get that raced an
// overwrite report the key absent), and so are tasks backing off after a
// failure (a RetryableFailure ack, or a fetch again without an answer), so
// tasks that keep failing do not hide the others.
func (n *Node) handleFetchTasks(ctx context.Context, req *api.FetchTasksRequest) (*api.FetchTasksResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	wait := time.Duration(req.WaitMillis) * time.Millisecond
	if wait > maxFetchWait {
		wait = maxFetchWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	release := time.NewTimer(time.Hour)
	release.Stop()
	defer release.Stop()
	var watching *wakeSlot
	defer func() { n.wake.unwatch(req.Segment, watching) }()
	for {
		// Take the segment's wake-up channel before reading, so an apply
		// between the read and the wait is not missed. Only entries that
		// concern this segment close it (wakeups.go).
		n.wake.unwatch(req.Segment, watching)
		if wait > 0 {
			watching = n.wake.watch(req.Segment)
		}
		if n.cfg.hooks.fetchScan != nil {
			n.cfg.hooks.fetchScan(req.Segment)
		}
		now := time.Now()
		var next time.Time // when the first withheld task may become fetchable
		tasks, more, err := n.fsm.FetchTasksFiltered(req.Segment, req.MountEpoch, req.Limit, func(t api.LocalDeleteTask) bool {
			held, until := n.soft.Withheld(t, req.MountEpoch, now)
			if held && (next.IsZero() || until.Before(next)) {
				next = until
			}
			return held
		})
		if err != nil {
			return nil, err
		}
		if len(tasks) > 0 || wait <= 0 {
			n.soft.Given(tasks, req.MountEpoch, now)
			n.metrics.fetchedTasks.Add(float64(len(tasks)))
			return &api.FetchTasksResponse{Tasks: tasks, MasterEpoch: n.fsm.Stats().MasterEpoch, More: more}, nil
		}
		var released <-chan time.Time
		if !next.IsZero() {
			release.Reset(time.Until(next))
			released = release.C
		}
		select {
		case <-watching.ch:
		case <-released:
		case <-deadline.C:
			return &api.FetchTasksResponse{MasterEpoch: n.fsm.Stats().MasterEpoch}, nil
		case <-ctx.Done():
			return nil, api.Errorf(api.CodeTimeout, "fetch cancelled: %v", ctx.Err())
		case <-n.stopped:
			return nil, api.Errorf(api.CodeUnavailable, "master shutting down")
		}
		release.Stop()
		if err := n.requireLeader(); err != nil {
			return nil, err
		}
	}
}

// handleAckTasks commits a holder's outcomes. A RetryableFailure keeps its
// task and backs it off (soft state): later fetches skip it for a while,
// doubling with each failure, so the tasks behind it are fetched. Failures
// (with why) do the same without a log entry, once the segment is seen
// mounted at the presented epoch.
func (n *Node) handleAckTasks(_ context.Context, req *api.AckTasksRequest) (*api.AckTasksResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if len(req.Results) > api.MaxBatchKeys || len(req.Failures) > api.MaxBatchKeys {
		return nil, api.Errorf(api.CodeInvalidParams, "%d results and %d failures: at most %d each", len(req.Results), len(req.Failures), api.MaxBatchKeys)
	}
	for _, r := range req.Results {
		if !r.Outcome.Valid() {
			return nil, api.Errorf(api.CodeInvalidParams, "task %d: unknown outcome %d", r.TaskID, r.Outcome)
		}
	}
	now := time.Now()
	if len(req.Failures) > 0 {
		if seg, ok := n.fsm.Segment(req.Segment); ok && seg.Mounted && seg.MountEpoch == req.MountEpoch {
			for _, f := range req.Failures {
				why := f.Error
				if len(why) > api.MaxTaskErrorLen {
					why = why[:api.MaxTaskErrorLen]
				}
				n.soft.TaskFailed(f.TaskID, req.MountEpoch, why, now)
			}
		}
	}
	if len(req.Results) == 0 {
		return &api.AckTasksResponse{}, nil
	}
	r, err := proposeFor[fsm.AckResult](n, &fsm.LocalDeleteAck{V: fsm.LocalDeleteAckV1, Segment: req.Segment, Epoch: req.MountEpoch, Results: req.Results})
	if err != nil {
		return nil, err
	}
	now = time.Now()
	for _, x := range req.Results {
		if x.Outcome.Terminal() {
			n.soft.TaskDone(x.TaskID)
		} else {
			n.soft.TaskFailed(x.TaskID, req.MountEpoch, "", now)
		}
	}
	n.metrics.ackedTasks.Add(float64(r.Dropped))
	n.metrics.observeDeleteLag(r.DroppedCreated, now)
	return &api.AckTasksResponse{Dropped: r.Dropped}, nil
}

// handleReconcile answers which of a holder's reported refs are not live
// on its segment. The barrier makes the answer reflect every entry
// committed before the call, so a put acknowledged just before is live.
// A not-live incarnation under a read lease is not named until the lease
// ends (a reader may be reading that copy): the answer waits for it, as
// long as the caller's deadline allows, and leaves it out otherwise.
func (n *Node) handleReconcile(ctx context.Context, req *api.ReconcileRequest) (*api.ReconcileResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if len(req.Objects) > api.MaxReconcilePage {
		return nil, api.Errorf(api.CodeInvalidParams, "%d refs exceed the page limit %d", len(req.Objects), api.MaxReconcilePage)
	}
	if err := n.barrier(ctx); err != nil {
		return nil, n.raftError(err)
	}
	notLive, undecided, err := n.fsm.Reconcile(req.Segment, req.MountEpoch, req.Objects)
	if err != nil {
		return nil, err
	}
	// An incarnation that is not live never becomes live again, so the
	// answer only has to wait for leases to end, not be recomputed.
	giveUp := time.Now().Add(n.cfg.LeaseTTL + time.Second)
	if d, ok := ctx.Deadline(); ok {
		if d = d.Add(-time.Second); d.Before(giveUp) {
			giveUp = d
		}
	}
	for {
		now := time.Now()
		var last time.Time
		free, held := notLive[:0:0], []api.ObjectRef(nil)
		for _, r := range notLive {
			if end := n.soft.LeaseEnd(r, now); !end.IsZero() {
				if end.After(last) {
					last = end
				}
				held = append(held, r)
				continue
			}
			free = append(free, r)
		}
		answer := &api.ReconcileResponse{NotLive: free, Undecided: append(undecided, held...)}
		if last.IsZero() || last.After(giveUp) {
			return answer, nil
		}
		t := time.NewTimer(time.Until(last))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return answer, nil
		case <-n.stopped:
			t.Stop()
			return nil, api.Errorf(api.CodeUnavailable, "master shutting down")
		}
		if err := n.requireLeader(); err != nil {
			return nil, err
		}
	}
}

func (n *Node) handleRetire(_ context.Context, req *api.RetireStorageRequest) (*api.AckTasksResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if req.By == "" || req.Reason == "" {
		return nil, api.Errorf(api.CodeInvalidParams, "retire needs --by and --reason for the audit log")
	}
	r, err := proposeFor[fsm.RetireResult](n, &fsm.RetireStorage{V: fsm.RetireStorageV1, Segment: req.Segment, By: req.By, Reason: req.Reason})
	if err != nil {
		return nil, err
	}
	n.log.Warn("storage retired by operator", "segment", req.Segment, "by", req.By, "reason", req.Reason, "dropped_tasks", r.Dropped)
	return &api.AckTasksResponse{Dropped: r.Dropped}, nil
}

func (n *Node) handleListTasks(_ context.Context, req *api.ListTasksRequest) (*api.ListTasksResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	// Bound the answer well inside one control frame.
	limit := req.Limit
	if limit <= 0 || limit > maxListTasks {
		limit = maxListTasks
	}
	var tasks []api.LocalDeleteTask
	var total, dfsPending int
	if req.Key != "" {
		dfsPending = n.fsm.DFSMarksOf(req.Key)
		if err := api.ValidKey(req.Key); err != nil {
			return nil, err
		}
		for _, t := range n.fsm.TasksOfKey(req.Key) {
			if req.Segment == "" || t.Segment == req.Segment {
				tasks = append(tasks, t)
			}
		}
		total = len(tasks)
		tasks = tasks[:min(limit, total)]
	} else {
		tasks, total = n.fsm.ListTasks(req.Segment, limit)
	}
	return &api.ListTasksResponse{Tasks: tasks, Total: total, Progress: n.taskProgress(tasks, time.Now()), DFSRecordsPending: dfsPending}, nil
}

// taskProgress says, per task, where it stands and why (api.TaskProgress;
// the first reason that applies wins): its holder is down, it is withheld
// behind an older copy, a read lease withholds it (until when), its last
// attempt failed, or it simply waits.
// ListTasks is served by the leader only (linearizable), so the soft state
// read here is the current term's.
func (n *Node) taskProgress(tasks []api.LocalDeleteTask, now time.Time) []api.TaskProgress {
	if len(tasks) == 0 {
		return nil
	}
	segs := map[api.SegmentID]api.SegmentInfo{}
	down := map[api.SegmentID]bool{}
	ids := make([]uint64, len(tasks))
	epochs := make([]uint64, len(tasks))
	for i, t := range tasks {
		seg, ok := segs[t.Segment]
		if !ok {
			seg, _ = n.fsm.Segment(t.Segment)
			live := n.soft.Live(t.Segment, n.cfg.HolderTTL, now)
			segs[t.Segment], down[t.Segment] = seg, !seg.Mounted || !live
		}
		ids[i], epochs[i] = t.ID, seg.MountEpoch
	}
	withheld := n.fsm.Withheld(tasks)
	leases := make([]time.Time, len(tasks))
	for i, t := range tasks {
		leases[i] = n.soft.LeaseEnd(api.ObjectRef{Key: t.Key, Incarnation: t.Incarnation}, now)
	}
	attempts := n.soft.AttemptsOf(ids, epochs)
	out := make([]api.TaskProgress, len(tasks))
	for i, t := range tasks {
		seg := segs[t.Segment]
		a := attempts[i]
		p := api.TaskProgress{Holder: seg.Endpoint, Attempts: a.Attempts, LastError: a.LastErr}
		if !a.LastGiven.IsZero() {
			p.LastGiven = a.LastGiven.UnixNano()
		}
		switch {
		case down[t.Segment]:
			p.State = api.TaskHolderDown
		case withheld[i]:
			p.State = api.TaskWithheld
		case !leases[i].IsZero():
			p.State, p.LeaseEnd = api.TaskLeased, leases[i].UnixNano()
		case a.Failing:
			p.State = api.TaskRetrying
		default:
			p.State = api.TaskPending
		}
		out[i] = p
	}
	return out
}

func (n *Node) handleListSegments(_ context.Context, _ *api.Empty) (*api.ListSegmentsResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	return &api.ListSegmentsResponse{Segments: n.fsm.Segments(), Refused: n.refused.list(time.Now())}, nil
}
