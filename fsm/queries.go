package fsm

import (
	"cmp"
	"slices"
	"strings"

	"sexton/api"
)

// Query limits.
const (
	// DefaultListLimit and MaxListLimit bound one List page.
	DefaultListLimit = 1000
	MaxListLimit     = 10000
	// DefaultListTasksLimit is ListTasks' page when limit ≤ 0.
	DefaultListTasksLimit = 1000
)

// ObjectView is a copy of one incarnation of an object; it shares nothing
// mutable with the FSM.
type ObjectView struct {
	Key         string
	Tenant      string
	Size        int64
	Incarnation api.ObjectIncarnation
	Created     int64
	PutID       string
	Replicas    []api.ReplicaDescriptor
}

func viewOf(key string, o *object) ObjectView {
	v := ObjectView{Key: key, Tenant: o.tenant(), Size: o.size, Incarnation: o.inc, Created: o.created, PutID: o.putID()}
	v.Replicas = make([]api.ReplicaDescriptor, len(o.replicas()))
	for i, r := range o.replicas() {
		v.Replicas[i] = r
		if r.DFS != nil {
			d := *r.DFS
			v.Replicas[i].DFS = &d
		}
	}
	return v
}

// PendingPut is a put in progress, for the leader's discard timeout.
type PendingPut struct {
	Key         string
	Incarnation api.ObjectIncarnation
	Created     int64
}

// Stats summarises the state.
type Stats struct {
	Objects, PendingPuts, Segments, PendingTasks, RegistryCapacity int
	MasterEpoch, ClusterID, AppliedIndex, AppliedTerm              uint64
	LeaderID, LeaderAddr                                           string
	TasksBySegment                                                 map[api.SegmentID]int
}

// Get returns key's visible (COMPLETE) incarnation.
func (f *FSM) Get(key string) (ObjectView, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e := f.st.objects.get(key)
	if e.complete == nil {
		return ObjectView{}, api.Errorf(api.CodeObjectNotFound, "key %q", key)
	}
	return viewOf(key, e.complete), nil
}

// Stat is Get plus the put in progress (if any) and the number of pending
// delete tasks of the key (any incarnation, any segment).
func (f *FSM) Stat(key string) (obj ObjectView, pending *api.ObjectIncarnation, pendingDeletes int, err error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e := f.st.objects.get(key)
	for t := e.tasks; t != nil; t = t.keyNext {
		pendingDeletes++
	}
	if e.pending != nil {
		inc := e.pending.inc
		pending = &inc
	}
	if e.complete == nil {
		return ObjectView{}, pending, pendingDeletes, api.Errorf(api.CodeObjectNotFound, "key %q", key)
	}
	return viewOf(key, e.complete), pending, pendingDeletes, nil
}

// IsPending reports whether inc is key's PENDING incarnation: a put the
// leader may still sign write grants for (not ended, not revoked).
func (f *FSM) IsPending(key string, inc api.ObjectIncarnation) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	p := f.st.objects.get(key).pending
	return p != nil && p.inc == inc
}

// Exists reports whether key has a COMPLETE incarnation.
func (f *FSM) Exists(key string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.objects.get(key).complete != nil
}

// List returns COMPLETE objects whose key has prefix, in key order,
// strictly after cursor; next is the last key returned when more follow,
// else "". A page walks the tree of COMPLETE incarnations from the
// cursor: O(log objects + limit), whatever the table holds. The cursor
// need not be a key that still exists, so keys removed or added between
// pages do not disturb it.
func (f *FSM) List(prefix, cursor string, limit int) ([]ObjectView, string) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := []ObjectView{}
	next := ""
	f.st.objects.ascendComplete(prefix, cursor, func(k string, o *object) bool {
		if len(out) == limit {
			next = out[limit-1].Key
			return false
		}
		out = append(out, viewOf(k, o))
		return true
	})
	return out, next
}

// PendingPuts lists puts in progress created before createdBefore, by key.
// It walks the index of puts in progress by creation time: O(log puts +
// puts returned), not a scan of the objects.
func (f *FSM) PendingPuts(createdBefore int64) []PendingPut {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []PendingPut
	f.st.objects.ascendPending(createdBefore, func(p pendingRef) bool {
		out = append(out, PendingPut{Key: p.key, Incarnation: p.obj.inc, Created: p.created})
		return true
	})
	slices.SortFunc(out, func(a, b PendingPut) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// checkFetcher is the gate of a holder's calls on its tasks and replicas
// (fetch, reconcile, list replicas, ack): a known segment, mounted at
// exactly epoch, advertising OBJECT_TOMBSTONE_V1.
func (st *state) checkFetcher(op string, id api.SegmentID, epoch uint64) (*segment, error) {
	seg, refused := st.mountedAt(op, id, epoch)
	if refused != nil {
		return nil, refused
	}
	if !seg.capable() {
		return nil, api.Errorf(api.CodeCapabilityRequired, "%s: segment %s does not advertise %s", op, id, api.CapObjectTombstoneV1)
	}
	return seg, nil
}

// mountedAt is segment id if it is mounted at exactly epoch, or op's
// refusal: an unknown segment, or a stale epoch.
func (st *state) mountedAt(op string, id api.SegmentID, epoch uint64) (*segment, *api.Error) {
	seg := st.segments[id]
	if seg == nil {
		return nil, api.Errorf(api.CodeSegmentNotFound, "%s: unknown segment %s", op, id)
	}
	if !seg.mounted || seg.epoch != epoch {
		return nil, staleEpoch(seg, epoch)
	}
	return seg, nil
}

// FetchTasks returns up to min(limit, 256) of seg's fetchable tasks in id
// order (limit ≤ 0 means 256) and whether more fetchable tasks exist. A
// task is withheld while an older incarnation of its key has a pending task
// anywhere (invariant 7). Fetch never removes anything.
func (f *FSM) FetchTasks(seg api.SegmentID, epoch uint64, limit int) (tasks []api.LocalDeleteTask, more bool, err error) {
	return f.FetchTasksFiltered(seg, epoch, limit, nil)
}

// FetchTasksFiltered is FetchTasks with a leader-side filter: a task for
// which skip returns true is withheld (leased to another fetch, or backing
// off after failures). A skipped task is not counted against limit and
// does not end the scan, so tasks that keep failing cannot starve the ones
// behind them. skip is called under the FSM's read lock: it must not call
// back into the FSM.
func (f *FSM) FetchTasksFiltered(seg api.SegmentID, epoch uint64, limit int, skip func(api.LocalDeleteTask) bool) (tasks []api.LocalDeleteTask, more bool, err error) {
	limit = api.PageLimit(limit, api.MaxFetchLimit)
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, err := f.st.checkFetcher("fetch", seg, epoch)
	if err != nil {
		return nil, false, err
	}
	tasks = []api.LocalDeleteTask{}
	f.st.reg.eachOfSeg(s.id, func(t *task) bool {
		if !f.st.fetchable(t) {
			return true
		}
		v := t.view()
		if skip != nil && skip(v) {
			return true
		}
		if len(tasks) == limit {
			more = true
			return false
		}
		tasks = append(tasks, v)
		return true
	})
	return tasks, more, nil
}

// NotLive answers reconciliation: which of the refs a holder reports for
// seg are not live there. A ref is live if the key's COMPLETE or PENDING
// incarnation is that incarnation and has a replica on seg. A not-live ref
// is reported only when no older incarnation of its key still has a pending
// task, so a newest copy is never tombstoned before the older copies are
// gone (invariant 7), and none that a live incarnation block could still
// commit (docs/DESIGN.md §8 "One-commit puts"). Output keeps input order.
func (f *FSM) NotLive(seg api.SegmentID, epoch uint64, refs []api.ObjectRef) ([]api.ObjectRef, error) {
	out, _, err := f.Reconcile(seg, epoch, refs)
	return out, err
}

// Reconcile is NotLive that also returns the refs left out for now:
// undecided, to be asked about again. A PutCommit may still make one live
// (its block is live), or it waits for an older incarnation's task or DFS
// removal mark (latest copy last).
func (f *FSM) Reconcile(seg api.SegmentID, epoch uint64, refs []api.ObjectRef) (notLive, undecided []api.ObjectRef, err error) {
	if len(refs) > api.MaxReconcilePage {
		return nil, nil, api.Errorf(api.CodeInvalidParams, "reconcile: %d refs exceed %d", len(refs), api.MaxReconcilePage)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, err := f.st.checkFetcher("reconcile", seg, epoch)
	if err != nil {
		return nil, nil, err
	}
	out := []api.ObjectRef{}
	for _, r := range refs {
		e := f.st.objects.get(r.Key)
		if liveOn(e.complete, r.Incarnation, s.id) || liveOn(e.pending, r.Incarnation, s.id) {
			continue
		}
		if olderIn(e.tasks, r.Incarnation) || f.st.olderDFSMark(r.Key, r.Incarnation) {
			// Withheld until the older incarnation's task or removal
			// mark is done (latest copy last).
			undecided = append(undecided, r)
			continue
		}
		// A PutCommit may still make an incarnation of a live block live.
		if f.st.inLiveBlock(r.Incarnation) {
			undecided = append(undecided, r)
			continue
		}
		out = append(out, r)
	}
	return out, undecided, nil
}

func liveOn(o *object, inc api.ObjectIncarnation, seg api.SegmentID) bool {
	return o != nil && o.inc == inc && onSegment(o, seg)
}

// ListTasks lists pending tasks in id order, of one segment or of all (seg
// ""), at most limit of them (≤ 0 means DefaultListTasksLimit); total counts
// all that match.
func (f *FSM) ListTasks(seg api.SegmentID, limit int) (tasks []api.LocalDeleteTask, total int) {
	if limit <= 0 {
		limit = DefaultListTasksLimit
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	reg := f.st.reg
	if seg != "" {
		total = reg.segCount(seg)
		reg.eachOfSeg(seg, func(t *task) bool {
			tasks = append(tasks, t.view())
			return len(tasks) < limit
		})
		return tasks, total
	}
	reg.byID.ascend(func(t *task) bool {
		tasks = append(tasks, t.view())
		return len(tasks) < limit
	})
	return tasks, reg.len()
}

// TasksOfKey returns the key's pending tasks (every incarnation, every
// segment) in id order; O(tasks of the key).
func (f *FSM) TasksOfKey(key string) []api.LocalDeleteTask {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []api.LocalDeleteTask
	for t := f.st.objects.get(key).tasks; t != nil; t = t.keyNext {
		out = append(out, t.view())
	}
	slices.SortFunc(out, func(a, b api.LocalDeleteTask) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Withheld reports, per task, whether it is withheld behind a pending
// task of an older incarnation of its key (invariant 7); a task no longer
// pending is not withheld.
func (f *FSM) Withheld(tasks []api.LocalDeleteTask) []bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]bool, len(tasks))
	for i, v := range tasks {
		if t := f.st.reg.byID.get(v.ID); t != nil {
			out[i] = !f.st.fetchable(t)
		}
	}
	return out
}

// Segment returns one segment's info.
func (f *FSM) Segment(id api.SegmentID) (api.SegmentInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.st.segments[id]
	if s == nil {
		return api.SegmentInfo{}, false
	}
	return s.info(f.st.reg.segCount(id)), true
}

// SegmentOfClient returns the segment clientID has mounted.
func (f *FSM) SegmentOfClient(clientID string) (api.SegmentInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	id, ok := f.st.clients[clientID]
	if !ok {
		return api.SegmentInfo{}, false
	}
	return f.st.segments[id].info(f.st.reg.segCount(id)), true
}

// Segments lists every known segment by id.
func (f *FSM) Segments() []api.SegmentInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]api.SegmentInfo, 0, len(f.st.segments))
	for id, s := range f.st.segments {
		out = append(out, s.info(f.st.reg.segCount(id)))
	}
	slices.SortFunc(out, func(a, b api.SegmentInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// SegmentsVersion names the segments' mount state, owners, pools and
// capacities as Segments returns them: it changes whenever they may have
// (not when only a segment's count of pending tasks does). Read it before
// Segments: then a cache keyed by it never keeps a list older than its key.
type SegmentsVersion struct{ restores, gen uint64 }

// SegmentsVersion returns the current SegmentsVersion.
func (f *FSM) SegmentsVersion() SegmentsVersion {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return SegmentsVersion{f.restores, f.st.segGen}
}

// Stats summarises the state.
func (f *FSM) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	st := f.st
	s := Stats{
		Objects: st.objects.completeCount(), PendingPuts: st.objects.pendingCount(), Segments: len(st.segments),
		PendingTasks: st.reg.len(), RegistryCapacity: st.reg.capacity,
		MasterEpoch: st.masterEpoch, ClusterID: st.clusterID, AppliedIndex: st.appliedIndex, AppliedTerm: st.appliedTerm,
		LeaderID: st.leaderID, LeaderAddr: st.leaderAddr,
		TasksBySegment: make(map[api.SegmentID]int, len(st.reg.bySeg)),
	}
	for id, q := range st.reg.bySeg {
		s.TasksBySegment[id] = q.live
	}
	return s
}

// Settings returns the replicated settings in force (defaults filled in)
// and whether a Settings entry was ever applied (or a snapshot carrying
// settings restored).
func (f *FSM) Settings() (api.Settings, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.effectiveSettings(), f.st.settingsSet
}

// LegacySettings returns the legacy settings the state applies under
// (Config.Legacy, or a restored snapshot's), defaults not filled in, and
// true, until a Settings entry replaces them; then the zero Settings and
// false. The leader puts them in the first Settings entry it proposes.
func (f *FSM) LegacySettings() (api.Settings, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.settingsSet {
		return api.Settings{}, false
	}
	return f.st.settings, true
}

// GrantKey returns a copy of the cluster's grant key, nil until an
// EpochBegin carried one.
func (f *FSM) GrantKey() []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.grantKey == nil {
		return nil
	}
	return slices.Clone(f.st.grantKey)
}
