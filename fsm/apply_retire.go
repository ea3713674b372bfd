package fsm

import (
	"slices"

	"sexton/api"
	"sexton/snapshot"
)

// applyRetire is the operator's force-drop of a permanently lost segment:
// its tasks are dropped (the bytes are gone with the disk), it is marked
// retired and unmounted, its replicas are stripped from every object, and
// the act is audited. An object left with no replica stays listed (its
// metadata is the operator's to remove); it is simply unreadable.
func (st *state) applyRetire(index uint64, c *RetireStorage) *RetireResult {
	st.segGen++
	seg := st.segments[c.Segment]
	if seg == nil && st.rebuildCluster != 0 && c.Segment != "" {
		// A late holder of a rebuilt cluster's lost cluster is refused
		// before it is ever known: retiring it records the decision, so
		// its mounts are refused as retired from then on.
		seg = &segment{id: api.SegmentID(st.intern(string(c.Segment)))}
		st.segments[seg.id] = seg
	}
	if seg == nil {
		return &RetireResult{Err: api.Errorf(api.CodeSegmentNotFound, "retire: unknown segment %s", c.Segment)}
	}
	var doomed []*task
	st.reg.eachOfSeg(seg.id, func(t *task) bool { doomed = append(doomed, t); return true })
	for _, t := range doomed {
		st.reg.drop(t)
	}
	if seg.mounted {
		delete(st.clients, seg.client)
	}
	seg.mounted, seg.client, seg.process, seg.retired = false, "", "", true
	st.wake.segment(seg.id)
	st.stripSegment(seg.id)
	st.audit = append(st.audit, snapshot.AuditEntry{
		Index: index, Segment: seg.id, By: c.By, Reason: c.Reason, DroppedTasks: len(doomed), At: c.Now,
	})
	if n := len(st.audit); n > maxAudit {
		st.audit = slices.Clone(st.audit[n-maxAudit:])
	}
	return &RetireResult{Dropped: len(doomed)}
}

// stripSegment removes seg's replicas from every object. It visits the
// whole table (a rare operator action); keys are collected and sorted first
// so the writes happen in a fixed order.
func (st *state) stripSegment(seg api.SegmentID) {
	var keys []string
	for _, k := range st.objects.keys() {
		if e := st.objects.get(k); onSegment(e.complete, seg) || onSegment(e.pending, seg) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		old := st.objects.get(k)
		e := old
		e.complete = st.withoutSegment(e.complete, seg)
		e.pending = st.withoutSegment(e.pending, seg)
		st.objects.set(k, old, e)
	}
}

func onSegment(o *object, seg api.SegmentID) bool {
	if o == nil {
		return false
	}
	for _, r := range o.replicas() {
		if r.Kind == api.ReplicaLocalDisk && r.Segment == seg {
			return true
		}
	}
	return false
}

func (st *state) withoutSegment(o *object, seg api.SegmentID) *object {
	if !onSegment(o, seg) {
		return o
	}
	var kept []api.ReplicaDescriptor
	for _, r := range o.replicas() {
		if !(r.Kind == api.ReplicaLocalDisk && r.Segment == seg) {
			kept = append(kept, r)
		}
	}
	return st.withReplicas(o, kept)
}
