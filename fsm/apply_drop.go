package fsm

import "sexton/api"

// applyDropReplicas drops seg's replicas of the named incarnations, for a
// holder that evicts live data. Only the segment's current owner may do it.
// A ref whose key still has an older incarnation's delete task pending is
// left out (the newest copy goes last, invariant 7).
func (st *state) applyDropReplicas(c *DropReplicas) *DropResult {
	dropped, _, err := st.dropReplicas("drop replicas", c.Segment, c.Epoch, c.Refs, func(old entry, r api.ObjectRef) bool {
		return olderIn(old.tasks, r.Incarnation)
	})
	return &DropResult{Err: err, Dropped: dropped}
}

// applyDropTombstoned drops seg's replicas of the named incarnations, which
// its holder reported tombstoned. Only the segment's current owner may
// report: a stale mount epoch changes nothing.
func (st *state) applyDropTombstoned(c *DropTombstoned) *DropTombstonedResult {
	dropped, gone, err := st.dropReplicas("drop tombstoned replicas", c.Segment, c.Epoch, c.Refs, nil)
	return &DropTombstonedResult{Err: err, Dropped: dropped, Objects: gone}
}

// dropReplicas drops the replicas on segment id, mounted at epoch, of the
// refs whose COMPLETE incarnation is the named one and has a replica there
// (conditional on the incarnation the holder named: a newer put of the key
// is never touched), but for those keep (when not nil) holds on to. An
// object left with no replica is gone (a removal: no late copy may bring it
// back; for an eviction, no tasks: the holder drops the bytes itself). It
// returns the refs dropped (empty, not nil, when none) and the objects gone;
// for a segment not mounted at epoch, only the refusal.
func (st *state) dropReplicas(op string, id api.SegmentID, epoch uint64, refs []api.ObjectRef, keep func(old entry, r api.ObjectRef) bool) ([]api.ObjectRef, int, *api.Error) {
	seg, err := st.mountedAt(op, id, epoch)
	if err != nil {
		return nil, 0, err
	}
	dropped, gone := []api.ObjectRef{}, 0
	for _, r := range refs {
		old := st.objects.get(r.Key)
		if !liveOn(old.complete, r.Incarnation, seg.id) || keep != nil && keep(old, r) {
			continue
		}
		e := old
		e.complete = st.withoutSegment(old.complete, seg.id)
		if len(e.complete.replicas()) == 0 {
			e.complete = nil
			gone++
			st.rememberRemoved(r.Key)
		}
		st.objects.set(r.Key, old, e)
		dropped = append(dropped, r)
	}
	return dropped, gone, nil
}
