package fsm

import "sexton/api"

// applyDropTombstoned drops seg's replicas of the named incarnations, which
// its holder reported tombstoned. Only the segment's current owner may
// report: a stale mount epoch changes nothing.
func (st *state) applyDropTombstoned(c *DropTombstoned) *DropTombstonedResult {
	seg, err := st.mountedAt("drop tombstoned replicas", c.Segment, c.Epoch)
	if err != nil {
		return &DropTombstonedResult{Err: err}
	}
	out := &DropTombstonedResult{Dropped: []api.ObjectRef{}}
	for _, r := range c.Refs {
		old := st.objects.get(r.Key)
		// Conditional on the incarnation the holder checked: a newer put
		// of the key is never touched.
		if !liveOn(old.complete, r.Incarnation, seg.id) {
			continue
		}
		e := old
		e.complete = st.withoutSegment(old.complete, seg.id)
		if len(e.complete.replicas()) == 0 {
			e.complete = nil
			out.Objects++
			st.rememberRemoved(r.Key) // a removal: no late copy may bring it back
		}
		st.objects.set(r.Key, old, e)
		out.Dropped = append(out.Dropped, r)
	}
	return out
}
