package holder

import (
	"sort"
	"time"

	"sexton/api"
)

// maxResolveRounds bounds how often a task is re-resolved because its
// record moved to another bucket while the batch ran (a GC relocation).
const maxResolveRounds = 4

// BatchMarkDeleted durably tombstones the records the tasks name
// (docs/DESIGN.md §5). Tasks are grouped by bucket and each affected bucket gets
// at most one metadata persistence: copy the committed metadata, set
// tombstoned on the entries whose key and incarnation match, write
// <id>.meta.tmp, fsync, rename over <id>.meta, fsync the directory, and only
// then drop the entries from the live index.
//
// Results come back one per task, in input order:
//   - Removed: the record was live here and is now durably tombstoned;
//   - AlreadyRemoved: the incarnation is tombstoned here already;
//   - StaleVersion: no record of that incarnation here — the key is absent
//     or held only under another incarnation (also for a key no record could
//     have, and for a record GC has reclaimed, which the holder cannot tell
//     from one it never had);
//   - RetryableFailure: persisting the bucket's tombstones failed (nothing
//     in memory changed and the old .meta, if still in place, is
//     authoritative), the task names another segment, or the store is
//     closed. Never acked.
//
// One task's outcome never depends on another bucket's failure.
func (s *Store) BatchMarkDeleted(tasks []api.LocalDeleteTask) []api.TaskResult {
	return s.markDead(tasks, false)
}

// BatchMarkEvicted is BatchMarkDeleted for records the master agreed to
// drop under disk pressure: the same durable tombstone, marked evicted in
// the same metadata write, so a rebuild can tell the copy was given up for
// space and not removed. A record already dead keeps the mark it has.
func (s *Store) BatchMarkEvicted(tasks []api.LocalDeleteTask) []api.TaskResult {
	return s.markDead(tasks, true)
}

func (s *Store) markDead(tasks []api.LocalDeleteTask, evicted bool) []api.TaskResult {
	results := make([]api.TaskResult, len(tasks))
	for i, t := range tasks {
		results[i] = api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		for i := range results {
			failed(&results[i], "store closed")
		}
		return results
	}
	// Close waits for this batch, so the lock is never released while a
	// persistence sequence is half done.
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	s.events.tombstoneBatches.Add(1)

	pending := make([]int, 0, len(tasks))
	for i, t := range tasks {
		switch {
		case t.Segment != "" && t.Segment != s.id.SegmentID:
			// Not ours to answer: acking it would drop another segment's intent.
			failed(&results[i], "task names segment "+string(t.Segment)+", this is "+string(s.id.SegmentID))
		case api.ValidKey(t.Key) != nil:
			results[i].Outcome = api.AckStaleVersion // no record can have this key
		default:
			pending = append(pending, i)
		}
	}
	for round := 0; len(pending) > 0; round++ {
		if round == maxResolveRounds {
			for _, i := range pending {
				failed(&results[i], "record kept moving between buckets")
			}
			break
		}
		groups, absent, ok := s.resolve(tasks, results, pending)
		if !ok {
			for _, i := range pending {
				failed(&results[i], "store closed")
			}
			break
		}
		s.testHook(hookTombstoneResolved)
		ids := make([]uint64, 0, len(groups))
		for id := range groups {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		pending = pending[:0]
		for _, id := range ids {
			pending = append(pending, s.tombstoneBucket(id, tasks, results, groups[id], evicted)...)
		}
		if len(absent) > 0 {
			pending = append(pending, s.recordAbsent(tasks, results, absent, evicted)...)
		}
	}
	return results
}

// failed marks r RetryableFailure, saying why (the master shows it as the
// task's last error).
func failed(r *api.TaskResult, why string) {
	r.Outcome = api.AckRetryableFailure
	if len(why) > api.MaxTaskErrorLen {
		why = why[:api.MaxTaskErrorLen]
	}
	r.Detail = why
}

// resolve answers tasks whose record is tombstoned (AlreadyRemoved),
// groups the live ones by the bucket that holds them now, and returns the
// absent ones, which get a floor before their StaleVersion.
func (s *Store) resolve(tasks []api.LocalDeleteTask, results []api.TaskResult, idxs []int) (map[uint64][]int, []int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, false
	}
	groups := make(map[uint64][]int)
	var absent []int
	for _, i := range idxs {
		k := objectKey{tasks[i].Key, tasks[i].Incarnation}
		if loc, ok := s.idx.live[k]; ok {
			groups[loc.bucket] = append(groups[loc.bucket], i)
		} else if _, dead := s.idx.dead[k]; dead {
			results[i].Outcome = api.AckAlreadyRemoved
		} else {
			absent = append(absent, i)
		}
	}
	return groups, absent, true
}

// recordAbsent answers tasks whose record is not here (never written, GC
// reclaimed it, or its write is still queued): it durably raises the
// key's tombstone floor to the incarnation first, so the record can never
// become live here afterwards, then answers StaleVersion. It holds
// commitMu while it checks and persists, so a put of the same incarnation
// either committed before the check (the task is returned to be
// tombstoned like any live record) or is planned after the floor is
// raised (and refused). A floor that cannot be persisted leaves the tasks
// RetryableFailure. evicted marks the floors as evictions.
func (s *Store) recordAbsent(tasks []api.LocalDeleteTask, results []api.TaskResult, idxs []int, evicted bool) []int {
	s.testHook(hookTombstoneFloorWait)
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	var live, need []int
	var dead []deadKey
	s.mu.Lock()
	for _, i := range idxs {
		k := objectKey{tasks[i].Key, tasks[i].Incarnation}
		if _, ok := s.idx.live[k]; ok {
			live = append(live, i)
		} else if _, ok := s.idx.dead[k]; ok {
			results[i].Outcome = api.AckAlreadyRemoved
		} else {
			need = append(need, i)
			dead = append(dead, deadKey{k, evicted})
		}
	}
	s.mu.Unlock()
	if len(need) == 0 {
		return live
	}
	outcome := api.AckStaleVersion
	err := s.raiseFloors(dead, tombstoneFloorPoints)
	if err != nil && s.retryAfterNoSpace(spacePathFloor, err) {
		err = s.raiseFloors(dead, tombstoneFloorPoints)
	}
	if err != nil {
		if isNoSpace(err) {
			s.warnLimited("floor-pending", "disk full: recording tombstone floors failed; tasks stay pending", "tasks", len(need), "err", err)
		} else {
			s.log.Warn("recording tombstone floors failed; tasks stay pending", "tasks", len(need), "err", err)
		}
		outcome = api.AckRetryableFailure
	}
	for _, i := range need {
		results[i].Outcome = outcome
		if err != nil {
			failed(&results[i], "recording tombstone floor: "+err.Error())
		}
	}
	return live
}

// tombstoneBucket persists the tombstones of one bucket's tasks. It returns
// the tasks whose record is no longer in this bucket (moved meanwhile), to
// be re-resolved by the caller. evicted marks the tombstones as evictions.
func (s *Store) tombstoneBucket(id uint64, tasks []api.LocalDeleteTask, results []api.TaskResult, idxs []int, evicted bool) []int {
	s.mu.Lock()
	b := s.buckets[id]
	s.mu.Unlock()
	if b == nil {
		return idxs
	}
	b.persistMu.Lock()
	defer b.persistMu.Unlock()

	// Re-check under persistMu: another batch or a GC switch may have
	// changed this bucket since resolve.
	var moved []int
	hits := make(map[int][]int) // slot → task indexes
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		for _, i := range idxs {
			failed(&results[i], "store closed")
		}
		return nil
	}
	next := b.meta.clone()
	next.V = metaVersionCurrent // a legacy bucket is rewritten in the current version
	for _, i := range idxs {
		k := objectKey{tasks[i].Key, tasks[i].Incarnation}
		loc, ok := s.idx.live[k]
		switch {
		case ok && loc.bucket == id:
			o := &next.Objects[loc.slot]
			if o.Key != k.key || o.Incarnation != k.inc {
				// The index and the metadata disagree: refuse to guess.
				failed(&results[i], "index and metadata disagree")
				s.log.Error("index and metadata disagree", "bucket", id, "slot", loc.slot, "key", k.key)
				continue
			}
			o.Tombstoned, o.Evicted = true, evicted
			hits[loc.slot] = append(hits[loc.slot], i)
		case ok:
			moved = append(moved, i)
		default:
			if _, dead := s.idx.dead[k]; dead {
				results[i].Outcome = api.AckAlreadyRemoved
			} else {
				moved = append(moved, i) // gone meanwhile: resolve records its floor
			}
		}
	}
	s.mu.Unlock()
	if len(hits) == 0 {
		return moved
	}
	next.V = metaVersionFor(next)

	start := time.Now()
	n, err := s.persistMeta(id, next, tombstonePoints)
	if err != nil && s.retryAfterNoSpace(spacePathTombstone, err) {
		// The reserve was released: the same write now has its space.
		n, err = s.persistMeta(id, next, tombstonePoints)
	}
	s.events.observeTombstonePersist(time.Since(start), err)
	if err != nil {
		if isNoSpace(err) {
			s.warnLimited("tombstone-pending", "disk full: tombstone persistence failed; tasks stay pending", "bucket", id, "tasks", len(hits), "err", err)
		} else {
			s.log.Warn("tombstone persistence failed; tasks stay pending", "bucket", id, "tasks", len(hits), "err", err)
		}
		for _, is := range hits {
			for _, i := range is {
				failed(&results[i], "persisting tombstone: "+err.Error())
			}
		}
		return moved
	}

	s.mu.Lock()
	b.meta = next
	b.metaFileSize = n
	b.legacy = false
	for slot, is := range hits {
		o := &next.Objects[slot]
		k := objectKey{o.Key, o.Incarnation}
		delete(s.idx.live, k)
		s.idx.markDead(k, id, o.Evicted)
		b.states[slot] = stateTombstoned
		b.liveBytes -= o.Size
		b.deadBytes += o.Size
		b.liveCount--
		b.deadCount++
		for _, i := range is {
			results[i].Outcome = api.AckRemoved
		}
	}
	s.mu.Unlock()
	signal(s.gcWake) // new dead bytes: the GC worker may have work
	return moved
}
