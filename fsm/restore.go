package fsm

import (
	"fmt"
	"io"

	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/snapshot"
)

// Restore replaces the state with the snapshot read from r. It is all or
// nothing: a new state is built aside and swapped in only if the whole
// stream reads and is consistent. A 1.2.0 or later snapshot carries its
// settings (replicated, or from 1.4.0 the legacy ones it applies under;
// neither: the defaults), grant key and session table; an older one (1.1.0, or 1.0.0
// whose objects carry incarnation zero, segments epoch zero and no
// capabilities, and which has no tasks) was written by a build that took
// its registry capacity from a flag, and restores under the FSM's legacy
// settings (Config.Legacy). One holding more tasks than their capacity is
// refused with a *LegacyCapacityError.
func (f *FSM) Restore(r io.Reader) error { return f.restore(r, f.legacy, false) }

// RestoreWith is Restore, except that a snapshot older than 1.2.0 (which
// carries no settings) is restored under fallback (zero fields: defaults)
// and takes fallback as its replicated settings. A 1.2.0 snapshot ignores
// fallback. The master validates an operator's file into a scratch FSM
// this way, with the cluster's current settings, and hands the scratch
// FSM's own snapshot to Raft.
func (f *FSM) RestoreWith(r io.Reader, fallback api.Settings) error {
	if err := CheckSettings(fallback); err != nil {
		return fmt.Errorf("fsm: restore: fallback %w", err)
	}
	return f.restore(r, fallback, fallback != (api.Settings{}))
}

// restore builds a state from r under settings (replicated if set, else
// legacy) for a snapshot that carries none, and swaps it in.
func (f *FSM) restore(r io.Reader, settings api.Settings, set bool) error {
	b := &restoreSink{st: newState(settings, set)}
	h, err := snapshot.Read(r, b)
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if err := b.finish(h); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	f.mu.Lock()
	f.st = b.st
	f.restores++
	f.mu.Unlock()
	return nil
}

// LegacyCapacityError refuses a snapshot older than 1.2.0 (it carries no
// settings) that holds more tasks than the registry capacity it was
// restored under. The build that wrote it ran with a capacity of at least
// Tasks, taken from its flag; the file does not say which. Restore it
// under exactly that capacity (Config.Legacy, or RestoreWith's fallback):
// any other makes the log written after it replay differently.
type LegacyCapacityError struct {
	Format   string
	Tasks    int // the tasks the snapshot holds
	Capacity int // the registry capacity it was restored under
}

func (e *LegacyCapacityError) Error() string {
	return fmt.Sprintf("%s snapshot holds %d tasks, more than the registry capacity %d it is restored under "+
		"(the build that wrote it ran with at least %d; restore it under that build's capacity)",
		e.Format, e.Tasks, e.Capacity, e.Tasks)
}

// restoreSink builds a state from snapshot records, checking as it goes
// that they describe a state Apply could have produced.
type restoreSink struct {
	st        *state
	format    string
	lastKey   string
	lastState snapshot.ObjectState
	lastInc   api.ObjectIncarnation
	tasks     []*task // task records, linked in after the objects
	// overCapacity counts the tasks of a snapshot older than 1.2.0 past
	// the registry capacity: read to the end, kept nowhere, so the
	// refusal can say how many the snapshot holds.
	overCapacity int
	taskIdents   map[taskIdent]struct{}
	nObjects     int
	lastSeg      api.SegmentID
	lastTask     uint64
	haveState    bool
	dfs          *dfsState
	dfsRecs      []dfsalloc.Record
	sessions     sessionRestore
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
}

func (b *restoreSink) Header(h snapshot.Header) error {
	switch h.Format {
	case snapshot.Format140, snapshot.Format130, snapshot.Format120, snapshot.Format110, snapshot.Format100:
	default:
		return corrupt("unknown format %q", h.Format)
	}
	b.format = h.Format
	b.st.clusterID = h.ClusterID
	return nil
}

func (b *restoreSink) object(o *snapshot.Object) error {
	if err := api.ValidKey(o.Key); err != nil {
		return corrupt("object %d: %v", b.nObjects, err)
	}
	if o.State != snapshot.ObjectComplete && o.State != snapshot.ObjectPending {
		return corrupt("object %q: unknown state %d", o.Key, o.State)
	}
	if b.format != snapshot.Format100 && b.nObjects > 0 {
		sameKeyPendingAfterComplete := o.Key == b.lastKey && b.lastState == snapshot.ObjectComplete && o.State == snapshot.ObjectPending
		if o.Key < b.lastKey || (o.Key == b.lastKey && !sameKeyPendingAfterComplete) {
			return corrupt("object %q out of order or duplicated after %q", o.Key, b.lastKey)
		}
	}
	if o.Size < 0 || len(o.Tenant) > api.MaxTenantLen || len(o.PutID) > api.MaxIDLen || len(o.Replicas) > api.MaxReplicas {
		return corrupt("object %q: field out of bounds", o.Key)
	}
	for i, r := range o.Replicas {
		if r.Kind != api.ReplicaLocalDisk && r.Kind != api.ReplicaDFS {
			return corrupt("object %q: replica %d has unknown kind %d", o.Key, i, r.Kind)
		}
		if r.Kind == api.ReplicaDFS && r.DFS == nil {
			return corrupt("object %q: DFS replica %d has no descriptor", o.Key, i)
		}
	}
	if o.Key == b.lastKey && o.State == snapshot.ObjectPending && !b.lastInc.Less(o.Incarnation) {
		return corrupt("object %q: pending %s not newer than complete %s", o.Key, o.Incarnation, b.lastInc)
	}
	b.lastKey, b.lastState, b.lastInc = o.Key, o.State, o.Incarnation
	b.nObjects++
	// The codec hands over freshly allocated records, so their strings
	// can be kept as they are.
	t := b.st.objects
	if o.State == snapshot.ObjectPending {
		if !t.restorePending(o.Key, b.st.newObject(o.Tenant, o.PutID, o.Replicas, o.Size, o.Created, o.Incarnation)) {
			return corrupt("object %q appears twice", o.Key)
		}
		return nil
	}
	// Keys in order (every format but 1.0.0) land past the tree's last
	// item, which leaves its nodes full (fsm/internal/btree), and each
	// insert walks the same rightmost path, which stays in cache.
	if !t.restoreComplete(o.Key, b.st.makeObject(o.Tenant, o.PutID, o.Replicas, o.Size, o.Created, o.Incarnation)) {
		return corrupt("object %q appears twice", o.Key)
	}
	return nil
}

// checkObjects checks what the records' order could not: in 1.0.0 (map
// order, one record per key) that no key came twice, once COMPLETE and
// once PENDING.
func (b *restoreSink) checkObjects() error {
	t := b.st.objects
	if b.format == snapshot.Format100 {
		for k := range t.pending {
			if t.complete.Has(completeItem{key: k}) {
				return corrupt("object %q appears twice", k)
			}
		}
	}
	return nil
}

func (b *restoreSink) segment(s *snapshot.Segment) error {
	if s.ID == "" || len(s.ID) > api.MaxIDLen || len(s.ClientID) > api.MaxIDLen || len(s.Pool) > api.MaxIDLen ||
		len(s.Endpoint) > api.MaxIDLen || len(s.Capabilities) > api.MaxCapabilities {
		return corrupt("segment %q: field out of bounds", s.ID)
	}
	if _, dup := b.st.segments[s.ID]; dup {
		return corrupt("segment %q appears twice", s.ID)
	}
	if b.format != snapshot.Format100 && len(b.st.segments) > 0 && s.ID <= b.lastSeg {
		return corrupt("segment %q out of order after %q", s.ID, b.lastSeg)
	}
	b.lastSeg = s.ID
	st := b.st
	seg := &segment{
		id: api.SegmentID(st.intern(string(s.ID))), client: st.intern(s.ClientID), pool: st.intern(s.Pool),
		capacity: s.Capacity, caps: normalizeCaps(s.Capabilities), endpoint: st.intern(s.Endpoint),
		epoch: s.MountEpoch, mounted: s.Mounted, retired: s.Retired, process: s.Process, rebuildMember: s.RebuildMember,
	}
	if b.format == snapshot.Format100 {
		seg.epoch, seg.caps = 0, nil
	}
	if !seg.mounted {
		seg.client, seg.process = "", "" // an unmounted segment has no owner, as Apply leaves it
	}
	if seg.retired && seg.mounted {
		return corrupt("segment %q is both retired and mounted", s.ID)
	}
	if seg.mounted && seg.client != "" {
		if other, ok := st.clients[seg.client]; ok {
			return corrupt("client %q bound to both %q and %q", seg.client, other, seg.id)
		}
		st.clients[seg.client] = seg.id
	}
	st.segments[seg.id] = seg
	return nil
}

func (b *restoreSink) task(t *snapshot.Task) error {
	if b.format == snapshot.Format100 {
		return corrupt("task record in a %s snapshot", b.format)
	}
	if t.ID == 0 || t.ID <= b.lastTask {
		return corrupt("task %d out of order or duplicated after %d", t.ID, b.lastTask)
	}
	if err := api.ValidKey(t.Key); err != nil {
		return corrupt("task %d: %v", t.ID, err)
	}
	seg := b.st.segments[t.Segment]
	if seg == nil {
		return corrupt("task %d names unknown segment %q", t.ID, t.Segment)
	}
	if seg.retired {
		return corrupt("task %d on retired segment %q", t.ID, t.Segment)
	}
	key := t.Key
	id := taskIdent{seg: seg.id, key: key, inc: t.Incarnation}
	if _, dup := b.taskIdents[id]; dup {
		return corrupt("task %d duplicates (segment %s, key %q, incarnation %s)", t.ID, t.Segment, t.Key, t.Incarnation)
	}
	if len(b.tasks) >= b.st.reg.capacity {
		if hasSessions(b.format) {
			return corrupt("more than %d tasks, the registry capacity of the snapshot's own settings", b.st.reg.capacity)
		}
		b.lastTask = t.ID
		b.overCapacity++
		return nil
	}
	b.lastTask = t.ID
	if b.taskIdents == nil {
		b.taskIdents = make(map[taskIdent]struct{})
	}
	b.taskIdents[id] = struct{}{}
	// Linked into the object table once it is built (finish).
	b.tasks = append(b.tasks, &task{id: t.ID, seg: seg.id, key: key, tenant: b.st.intern(t.Tenant), inc: t.Incarnation, created: t.Created})
	return nil
}

func (b *restoreSink) state(s *snapshot.State) error {
	if b.format == snapshot.Format100 {
		return corrupt("state record in a %s snapshot", b.format)
	}
	if b.haveState {
		return corrupt("second state record")
	}
	if len(s.Audit) > maxAudit {
		return corrupt("%d audit entries exceed %d", len(s.Audit), maxAudit)
	}
	if len(s.LeaderID) > api.MaxIDLen || len(s.LeaderAddr) > api.MaxIDLen {
		return corrupt("state: leader field out of bounds")
	}
	b.haveState = true
	st := b.st
	st.masterEpoch, st.nextTaskID, st.lastNow = s.MasterEpoch, s.NextTaskID, s.LastNow
	st.leaderID, st.leaderAddr = st.intern(s.LeaderID), st.intern(s.LeaderAddr)
	if len(s.Audit) > 0 {
		st.audit = append([]snapshot.AuditEntry(nil), s.Audit...)
	}
	if !hasSessions(b.format) {
		return nil
	}
	// 1.2.0 and later carry the replicated settings, or (1.4.0) the legacy
	// ones the state applies under (neither: the defaults), and come before the
	// tasks, so the capacity check below uses them.
	st.settings, st.settingsSet = api.Settings{}, false
	switch {
	case s.Settings != nil && s.Legacy != nil:
		return corrupt("state has both replicated and legacy settings")
	case s.Settings != nil:
		if err := CheckSettings(*s.Settings); err != nil {
			return corrupt("state settings: %v", err)
		}
		st.settings, st.settingsSet = *s.Settings, true
	case s.Legacy != nil:
		if err := CheckSettings(*s.Legacy); err != nil {
			return corrupt("state legacy settings: %v", err)
		}
		st.settings = *s.Legacy
	}
	st.reg.capacity = st.effectiveSettings().RegistryCapacity
	if len(s.GrantKey) != 0 {
		if len(s.GrantKey) != api.GrantKeyLen {
			return corrupt("grant key of %d bytes", len(s.GrantKey))
		}
		st.grantKey = append([]byte(nil), s.GrantKey...)
	}
	st.sess.clock = s.SessionClock
	st.incBase, st.rebuildCluster, st.rebuildBase = s.IncBase, s.RebuildCluster, s.RebuildBase
	if st.rebuildBase == 0 && st.rebuildCluster != 0 {
		// A state written before the field: the base it then had is the
		// best bound there is.
		st.rebuildBase = st.incBase
	}
	st.rebuildClosed, st.rebuildOverflow = s.RebuildClosed, s.RebuildOverflow
	st.rebuildRemoved = restoreRemoved(s.RebuildRemoved)
	return st.restoreBlocks(s.IncBlocks)
}

// hasSessions reports whether a snapshot of format carries 1.2.0's
// sessions, settings and grant key.
func hasSessions(format string) bool {
	return format == snapshot.Format120 || hasJobs(format)
}

// hasJobs reports whether a snapshot of format carries 1.3.0's jobs
// section.
func hasJobs(format string) bool {
	return format == snapshot.Format130 || format == snapshot.Format140
}

// job restores one bulk-delete job (1.3.0 and later): ids strictly
// increasing, as Apply appends them, within the bounds Apply keeps.
func (b *restoreSink) job(j *snapshot.Job) error {
	if !hasJobs(b.format) {
		return corrupt("job record in a %s snapshot", b.format)
	}
	t := &b.st.jobs
	if n := len(t.jobs); n > 0 && j.ID <= t.jobs[n-1].ID {
		return corrupt("job %d out of order after job %d", j.ID, t.jobs[n-1].ID)
	}
	cp := *j
	cp.Kept = nil
	t.jobs = append(t.jobs, &cp)
	if active := t.active(); active > MaxActiveJobs || len(t.jobs)-active > MaxFinishedJobs {
		return corrupt("more jobs than the state keeps (%d active, %d finished)", active, len(t.jobs)-active)
	}
	// The snapshot package checked the kept keys (under the prefix, after
	// the cursor, in order, within api.MaxJobKeptBytes, an active job's).
	for _, k := range j.Kept {
		t.addKept(&cp, k.Key, k.Incarnation)
	}
	return nil
}

// dfsRecord reads the dfs_buckets section: first the head (the cluster's
// DFS settings and clock), then the allocator's records, restored as a
// whole in finish.
func (b *restoreSink) dfsRecord(raw []byte) error {
	if b.dfs == nil {
		var h dfsSectionHead
		if err := snapshot.DecodeDFSRecord(raw, &h); err != nil {
			return corrupt("dfs_buckets head: %v", err)
		}
		if h.V != dfsSectionV1 {
			return corrupt("dfs_buckets head version %d (this build reads %d)", h.V, dfsSectionV1)
		}
		a, err := dfsalloc.New(h.Settings.Config())
		if err != nil {
			return corrupt("dfs_buckets head: %v", err)
		}
		marks, markBytes, err := restoreDFSMarks(h.Marks)
		if err != nil {
			return corrupt("dfs_buckets head: %v", err)
		}
		b.dfs = &dfsState{settings: h.Settings, alloc: a, clock: h.Clock, marks: marks, markBytes: markBytes}
		return nil
	}
	r, err := dfsalloc.DecodeRecord(raw)
	if err != nil {
		return corrupt("dfs_buckets record %d: %v", len(b.dfsRecs)+1, err)
	}
	b.dfsRecs = append(b.dfsRecs, r)
	return nil
}

// finish checks what can only be checked once everything is read.
func (b *restoreSink) finish(h snapshot.Header) error {
	st := b.st
	if err := b.checkObjects(); err != nil {
		return err
	}
	if b.format == "" {
		b.format = h.Format
	}
	if b.overCapacity > 0 {
		return &LegacyCapacityError{Format: b.format, Tasks: len(b.tasks) + b.overCapacity, Capacity: st.reg.capacity}
	}
	st.reg.insertRestored(b.tasks)
	b.tasks, b.taskIdents = nil, nil
	b.finishSessions()
	if b.format != snapshot.Format100 {
		if !b.haveState {
			return corrupt("%s snapshot without a state record", b.format)
		}
		if st.nextTaskID == 0 || st.nextTaskID <= b.lastTask {
			return corrupt("next task id %d not above the largest task id %d", st.nextTaskID, b.lastTask)
		}
	} else {
		st.nextTaskID = 1
		st.lastNow = h.Created
	}
	if b.dfs != nil {
		if err := b.dfs.alloc.Restore(b.dfsRecs); err != nil {
			return corrupt("dfs_buckets: %v", err)
		}
		st.dfs, b.dfsRecs = b.dfs, nil
	}
	st.clusterID = h.ClusterID
	st.appliedIndex, st.appliedTerm = h.LastIndex, h.LastTerm
	return nil
}
