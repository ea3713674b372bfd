package holder

import (
	"fmt"
	"sort"

	"sexton/api"
)

// evictOldest offers the master the live records of the oldest live bucket
// not yet tried in this pass, and tombstones locally exactly the ones the
// master agreed to drop. The tombstoned bucket is then reclaimed by the
// normal path. It returns how many records were evicted.
func (w *gcWorker) evictOldest(tried map[uint64]bool) (int, error) {
	s := w.s
	if w.ev == nil {
		return 0, fmt.Errorf("%w: disk usage is above the low watermark, no dead bytes remain, and no evictor is configured", ErrEvictionUnavailable)
	}
	s.mu.Lock()
	var victim *bucket
	for _, b := range s.buckets {
		if b.liveCount > 0 && !tried[b.id] && (victim == nil || b.id < victim.id) {
			victim = b
		}
	}
	var refs []api.ObjectRef
	if victim != nil {
		tried[victim.id] = true
		for slot, st := range victim.states {
			if st == stateLive {
				o := &victim.meta.Objects[slot]
				refs = append(refs, api.ObjectRef{Key: o.Key, Incarnation: o.Incarnation})
			}
		}
	}
	s.mu.Unlock()
	if victim == nil {
		return 0, nil
	}
	sort.Slice(refs, func(i, j int) bool { return refLess(refs[i], refs[j]) })
	// Even with an error, what came back was dropped by the master (an
	// earlier page of the request): those records are tombstoned too.
	evicted, evErr := w.ev.EvictObjects(refs)
	offered := make(map[api.ObjectRef]bool, len(refs))
	for _, r := range refs {
		offered[r] = true
	}
	tasks := make([]api.LocalDeleteTask, 0, len(evicted))
	for _, r := range evicted {
		if offered[r] { // never tombstone what was not offered
			tasks = append(tasks, api.LocalDeleteTask{Segment: s.SegmentID(), Key: r.Key, Incarnation: r.Incarnation})
			delete(offered, r)
		}
	}
	n := 0
	for _, res := range s.BatchMarkEvicted(tasks) {
		if res.Outcome == api.AckRemoved {
			n++
		}
	}
	s.mu.Lock()
	if n > 0 {
		s.gcStats.BucketsEvicted++
		s.gcStats.ObjectsEvicted += int64(n)
	}
	s.mu.Unlock()
	s.log.Info("evicted live objects after the master agreed", "bucket", victim.id, "offered", len(refs), "evicted", n)
	if evErr != nil {
		return n, fmt.Errorf("holder: GC: evicting bucket %d (%d objects, %d evicted): %w", victim.id, len(refs), n, evErr)
	}
	return n, nil
}
