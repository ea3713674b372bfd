package master

// The leader's DFS duties: the duty loop (configure the cluster, check the
// root, create and delete files, evict, flush read touches, remove stray
// files) and the two hooks the object handlers use (noteDFSRead,
// dfsWaitReady): the node glue around the decisions of dfsduties.Duties.
// The DFS RPC handlers are in rpc_dfs.go.

import (
	"context"
	"errors"
	"slices"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm"
	"sexton/fsm/dfsalloc"
	"sexton/master/policy/dfsduties"
)

// dfsNode is this master's DFS machinery: the file system below the DFS
// root and the leader's soft state for its DFS duties (dfsduties.Duties).
type dfsNode struct {
	fs   *dfsio.Posix
	kick chan struct{}
	*dfsduties.Duties
}

func newDFSNode(s dfsio.Settings) (*dfsNode, error) {
	if !s.Enabled() {
		return nil, nil
	}
	fs, err := dfsio.Open(s)
	if err != nil {
		return nil, err
	}
	return &dfsNode{fs: fs, kick: make(chan struct{}, 1), Duties: dfsduties.New()}, nil
}

func (d *dfsNode) nudge() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// checkInterval is the cluster's eviction check interval.
func (n *Node) dfsCheckInterval() time.Duration {
	if s, ok := n.fsm.DFSSettings(); ok && s.EvictionCheckInterval > 0 {
		return time.Duration(s.EvictionCheckInterval) * time.Second
	}
	return 5 * time.Second
}

// noteDFSRead records a read of the DFS replicas in reps for LRU eviction,
// at most once per entry per check interval.
func (n *Node) noteDFSRead(key string, reps []api.ReplicaDescriptor) {
	d := n.dfs
	if d == nil {
		return
	}
	d.NoteRead(key, reps, time.Now(), n.dfsCheckInterval())
}

// dfsLeader runs the DFS duties while this node leads: configure the
// cluster, reconcile the root, then file work, eviction, touches and stray
// cleanup until ctx ends.
func (n *Node) dfsLeader(ctx context.Context) {
	d := n.dfs
	if !n.dfsConfigure() {
		return
	}
	tick := time.NewTicker(n.cfg.DFSTick)
	defer tick.Stop()
	lastCheck := time.Time{}
	checkedMissing := false
	var rootLogged time.Time
	for {
		// Every duty reads or changes files below the root: none runs while
		// the root is unusable (a wrong root's files are not ours to create,
		// remove or judge lost).
		if err := n.dfsRootReady(); err != nil {
			if time.Since(rootLogged) >= 30*time.Second {
				rootLogged = time.Now()
				n.log.Error("DFS ROOT UNUSABLE: DFS duties stopped, no DFS file is judged lost until it is fixed", "root", d.fs.Root(), "error", err)
			}
		} else {
			if !rootLogged.IsZero() {
				rootLogged = time.Time{}
				n.log.Warn("DFS root usable again; DFS duties resume", "root", d.fs.Root())
			}
			if !checkedMissing {
				checkedMissing = n.dfsCheckMissing()
			}
			n.dfsFileOps(ctx)
			n.dfsWriteMarks()
			if time.Since(lastCheck) >= n.dfsCheckInterval() {
				lastCheck = time.Now()
				n.dfsFlushTouches()
				n.dfsEvict()
				n.dfsScanStrays()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.kick:
		}
	}
}

// dfsConfigure proposes this master's allocator settings unless the
// cluster already has exactly them. A refused change (the cluster's
// allocator holds data under other shared settings) is logged loudly and
// the cluster's settings stay in force; the duties still run, from the
// state. It returns false only when the leader is stopping.
func (n *Node) dfsConfigure() bool {
	want := fsm.SettingsOf(n.cfg.DFS.Alloc)
	if have, ok := n.fsm.DFSSettings(); ok && have == want {
		return true
	}
	r, err := proposeFor[fsm.DFSResult](n, &fsm.DFSConfigure{V: fsm.DFSConfigureV1, Settings: want})
	if r == nil {
		n.log.Warn("DFSConfigure not committed; DFS duties wait for the next term", "error", err)
		return false
	}
	if err != nil {
		n.log.Error("the cluster refused this master's DFS settings; the cluster's stay in force", "error", err)
	}
	return true
}

// dfsRootReady checks the DFS root (dfsio.CheckRoot) against this
// cluster. While the cluster relies on no DFS file yet (first use) the
// leader writes the root's marker; from then on a root without this
// cluster's marker is unusable — except a root written before markers
// existed, adopted only when it holds every file the state relies on
// (an empty, unmounted mount point holds none of them).
func (n *Node) dfsRootReady() error {
	stats, _ := n.fsm.DFSStats()
	adopted, err := checkDFSRoot(n.dfs.fs, n.fsm.Stats().ClusterID, stats.Units)
	if adopted {
		n.log.Warn("DFS root had no marker but holds every file the cluster relies on; marked as this cluster's", "root", n.dfs.fs.Root())
	}
	return err
}

// checkDFSRoot is dfsRootReady's decision; adopted says a pre-marker root
// was marked.
func checkDFSRoot(fs *dfsio.Posix, cluster uint64, units []dfsalloc.UnitStats) (adopted bool, err error) {
	anyReady := false
	var ready []string // files the state relies on now
	for _, u := range units {
		if u.File == dfsalloc.FileReady {
			anyReady = true
			if u.State != dfsalloc.UnitDeleting {
				ready = append(ready, u.Path)
			}
		}
	}
	if !anyReady {
		return false, fs.InitRoot(cluster)
	}
	fs.Bind(cluster)
	err = fs.CheckRoot()
	if !errors.Is(err, dfsio.ErrNoRootMarker) {
		return false, err
	}
	names, lerr := fs.List()
	if lerr != nil || len(ready) == 0 {
		return false, err
	}
	for _, p := range ready {
		if _, found := slices.BinarySearch(names, p); !found {
			return false, err
		}
	}
	return true, fs.InitRoot(cluster)
}

// dfsCheckMissing is the start-of-term reconciliation of files the state
// needs: a ready unit whose file is gone has lost its entries, and that is
// said loudly, never left as a silent gap. It reports false when the
// check could not be made (the root turned unusable), to be run again.
func (n *Node) dfsCheckMissing() bool {
	stats, ok := n.fsm.DFSStats()
	if !ok {
		return true
	}
	lost, err := dfsduties.LostUnits(stats.Units, n.dfs.fs.Exists)
	if err != nil {
		n.log.Error("DFS ROOT UNUSABLE during the missing-file check: nothing marked lost", "root", n.dfs.fs.Root(), "error", err)
		return false
	}
	for _, u := range lost {
		r, err := proposeFor[fsm.DFSResult](n, &fsm.DFSMarkLost{V: fsm.DFSMarkLostV1, Unit: u.Unit})
		if r == nil {
			n.log.Warn("DFSMarkLost not committed", "unit", u.Unit, "error", err)
			continue
		}
		n.log.Error("DFS FILE MISSING: its entries are lost and their replicas dropped",
			"unit", u.Unit, "path", u.Path, "entries_lost", len(r.Dropped), "objects_lost", r.ObjectsLost, "error", r.Err)
		for _, ref := range r.Dropped {
			n.log.Error("DFS replica lost", "key", ref.Key, "path", ref.Desc.Path, "offset", ref.Desc.Offset)
		}
	}
	return true
}

// dfsFileOps performs the file work the state waits for, one op at a time
// (so per unit in order), and records each outcome by a command.
func (n *Node) dfsFileOps(ctx context.Context) {
	d := n.dfs
	for _, op := range n.fsm.DFSPendingFileOps() {
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		if !d.FileOpDue(op.Unit, op.Failures, now) {
			continue
		}
		switch op.Kind {
		case dfsalloc.FileCreate:
			if err := d.fs.Create(op.Path, op.Size); err != nil {
				n.log.Warn("DFS file create failed; retrying", "unit", op.Unit, "path", op.Path, "error", err)
				d.FileOpDone(op.Unit, true, time.Now())
				continue
			}
			r, err := proposeFor[fsm.DFSResult](n, &fsm.DFSFileOp{V: fsm.DFSFileOpV1, Kind: op.Kind, Unit: op.Unit, OK: true})
			if r == nil {
				return
			}
			if api.CodeOf(err) == api.CodeObjectNotFound {
				// The unit went away meanwhile: the file just made is nobody's.
				_ = d.fs.Remove(op.Path)
			}
			d.FileOpDone(op.Unit, false, time.Now())
		case dfsalloc.FileDelete:
			if now.UnixNano() < op.NotBefore {
				continue
			}
			err := d.fs.Remove(op.Path)
			if err != nil {
				n.log.Warn("DFS file delete failed; the unit stays charged and is retried", "unit", op.Unit, "path", op.Path, "failures", op.Failures+1, "error", err)
			}
			if _, perr := n.propose(&fsm.DFSFileOp{V: fsm.DFSFileOpV1, Kind: op.Kind, Unit: op.Unit, OK: err == nil}); perr != nil {
				return
			}
			d.FileOpDone(op.Unit, err != nil, time.Now())
		}
	}
}

// maxMarksPerEntry bounds one DFSMarked entry (and one journal append).
const maxMarksPerEntry = 256

// dfsWriteMarks appends the removal records the state queued to the DFS
// root's journal, fdatasynced whatever MOONCAKE_DFS_FSYNC says (removals
// are rare next to puts, and a removal record lost to a power cut would
// let a rebuild bring the value back), and only then proposes DFSMarked to
// drop them from the queue. A leader that dies in between leaves them
// queued; the next one writes them again (a repeated record is harmless).
func (n *Node) dfsWriteMarks() {
	for range 16 {
		marks := n.fsm.DFSPendingMarks(maxMarksPerEntry)
		if len(marks) == 0 {
			return
		}
		recs := make([]dfsio.RangeRecord, len(marks))
		for i, m := range marks {
			recs[i] = dfsio.RemovedRecord(m.Key, m.Inc, m.Desc, m.Through)
		}
		if err := n.dfs.fs.AppendRecords(recs, true); err != nil {
			n.log.Error("DFS removal records not written; the removals stay queued and are retried", "marks", len(marks), "error", err)
			return
		}
		r, err := proposeFor[fsm.DFSResult](n, &fsm.DFSMarked{V: fsm.DFSMarkedV1, Marks: marks})
		if r == nil || err != nil {
			n.log.Warn("DFSMarked not applied; the removal records are written again", "error", err)
			return
		}
	}
}

// dfsFlushTouches proposes the reads noted since the last check as
// touches, for LRU eviction.
func (n *Node) dfsFlushTouches() {
	refs := n.dfs.TakeTouches(time.Now(), n.dfsCheckInterval())
	for len(refs) > 0 {
		chunk := refs[:min(len(refs), api.MaxBatchKeys)]
		refs = refs[len(chunk):]
		if _, err := n.propose(&fsm.DFSTouch{V: fsm.DFSTouchV1, Refs: chunk}); err != nil {
			return
		}
	}
}

// dfsEvict plans with this leader's read leases and proposes the plan;
// Apply re-validates it.
func (n *Node) dfsEvict() {
	// As in handleEvict: no Get may answer an entry between the lease
	// check and the applied eviction.
	n.soft.DropMu.Lock()
	defer n.soft.DropMu.Unlock()
	now := time.Now()
	plan, ok := n.fsm.DFSPlanEviction(now.UnixNano(), func(key string) bool { return n.soft.LeasedKey(key, now) })
	if !ok || len(plan.Candidates) == 0 {
		return
	}
	r, err := proposeFor[fsm.DFSResult](n, &fsm.DFSEvict{V: fsm.DFSEvictV1, Plan: plan, Now: now.UnixNano()})
	if r == nil {
		return
	}
	if err != nil {
		n.log.Warn("DFS eviction refused", "error", err)
		return
	}
	n.log.Info("DFS eviction", "candidates", len(plan.Candidates), "entries_evicted", len(r.Dropped), "objects_evicted", r.ObjectsLost)
	n.dfs.nudge()
}

// dfsKnownPaths are the files the state knows (any unit, any state).
func (n *Node) dfsKnownPaths() map[string]bool {
	stats, _ := n.fsm.DFSStats()
	known := make(map[string]bool, len(stats.Units))
	for _, u := range stats.Units {
		known[u.Path] = true
	}
	return known
}

// dfsScanStrays reports allocator-named files the state does not know and
// removes them once they have stayed unknown for the grace period.
func (n *Node) dfsScanStrays() {
	d := n.dfs
	names, err := d.fs.List()
	if err != nil {
		n.log.Warn("DFS root not listable", "root", d.fs.Root(), "error", err)
		return
	}
	seen, due := d.ScanStrays(names, n.dfsKnownPaths(), time.Now(), n.cfg.DFSStrayGrace)
	for _, name := range seen {
		n.log.Warn("stray DFS file the state does not know; removing it after the grace period", "path", name, "grace", n.cfg.DFSStrayGrace)
	}
	for _, st := range due {
		if n.dfsKnownPaths()[st.Path] {
			continue
		}
		if err := d.fs.Remove(st.Path); err != nil {
			n.log.Warn("stray DFS file not removed", "path", st.Path, "error", err)
			continue
		}
		n.log.Warn("stray DFS file removed", "path", st.Path, "first_seen", st.FirstSeen)
		d.StrayRemoved(st.Path)
	}
}

// dfsWaitReady waits until every unit the DFS descriptors name has its
// file confirmed, so a client never writes into a missing file.
func (n *Node) dfsWaitReady(ctx context.Context, reps []api.ReplicaDescriptor) error {
	deadline := time.NewTimer(n.cfg.ApplyTimeout)
	defer deadline.Stop()
	for {
		wake := n.wake.dfsChanged()
		stats, _ := n.fsm.DFSStats()
		missing := dfsduties.UnreadyDFSFile(stats.Units, reps)
		if missing == "" {
			return nil
		}
		n.dfs.nudge()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return api.Errorf(api.CodeUnavailable, "DFS file %s not created within %v", missing, n.cfg.ApplyTimeout)
		}
	}
}
