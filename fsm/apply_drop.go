package fsm

import "sexton/api"

// applyDropReplicas drops seg's replicas of the named incarnations, for a
// holder that evicts live data. Only the segment's current owner may do it.
func (st *state) applyDropReplicas(c *DropReplicas) *DropResult {
	seg, err := st.mountedAt("drop replicas", c.Segment, c.Epoch)
	if err != nil {
		return &DropResult{Err: err}
	}
	out := &DropResult{Dropped: []api.ObjectRef{}}
	for _, r := range c.Refs {
		old := st.objects.get(r.Key)
		if !liveOn(old.complete, r.Incarnation, seg.id) || olderIn(old.tasks, r.Incarnation) {
			continue
		}
		e := old
		e.complete = st.withoutSegment(old.complete, seg.id)
		if len(e.complete.replicas()) == 0 {
			e.complete = nil // no copy left anywhere: the object is evicted
			st.rememberRemoved(r.Key)
		}
		st.objects.set(r.Key, old, e)
		out.Dropped = append(out.Dropped, r)
	}
	return out
}
