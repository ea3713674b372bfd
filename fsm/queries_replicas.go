package fsm

import "sexton/api"

// ReplicasOnScanBudget bounds the keys one ReplicasOn call visits, so a
// page over a large table with few of its objects on the segment holds
// the read lock briefly; the caller goes on from the returned cursor.
const ReplicasOnScanBudget = 1 << 14

// ReplicasOn pages through the COMPLETE incarnations the table places on
// seg (a LOCAL_DISK replica there), in key order, for keys strictly after
// after: at most limit refs (≤ 0 or above api.MaxReconcilePage means
// api.MaxReconcilePage), visiting at most ReplicasOnScanBudget keys. next
// is the cursor to go on from and more says whether keys remain. Only the
// segment's current, capable owner may ask.
func (f *FSM) ReplicasOn(seg api.SegmentID, epoch uint64, after string, limit int) (refs []api.ObjectRef, next string, more bool, err error) {
	limit = api.PageLimit(limit, api.MaxReconcilePage)
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, err := f.st.checkFetcher("list replicas", seg, epoch)
	if err != nil {
		return nil, "", false, err
	}
	refs = []api.ObjectRef{}
	next = after
	visited := 0
	f.st.objects.ascendComplete("", after, func(key string, o *object) bool {
		if len(refs) == limit || visited == ReplicasOnScanBudget {
			more = true
			return false
		}
		visited++
		next = key
		if onSegment(o, s.id) {
			refs = append(refs, api.ObjectRef{Key: key, Incarnation: o.inc})
		}
		return true
	})
	return refs, next, more, nil
}
