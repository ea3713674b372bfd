package dfsalloc

import (
	"cmp"
	"slices"
)

func (a *shardAllocator) Stats() Stats {
	s := Stats{
		Allocator: KindShard, Capacity: satMul(len(a.shards), a.cfg.ShardCapacity),
		Evicted: a.evicted, Aborted: a.aborted, Lost: a.lost,
	}
	for _, sh := range a.shards {
		if sh.file == 0 {
			continue
		}
		u := UnitStats{
			Unit: sh.id, Path: sh.path, State: UnitOpen, File: sh.file, Capacity: a.cfg.ShardCapacity,
			Used: sh.live + sh.deferredBytes, LiveBytes: sh.live, DeadBytes: sh.deferredBytes,
			LiveEntries: len(sh.entries), PendingEntries: sh.pending,
		}
		for _, e := range sh.entries {
			u.LastAccess = max(u.LastAccess, e.lastAccess)
		}
		s.add(u)
	}
	return s
}

// Records: the meta record, then every shard whose file was ever needed,
// with its entries by offset and its deferred ranges in queue order. Free
// lists are not written: they are the complement of the rest.
func (a *shardAllocator) Records() []Record {
	var units, entries, deferred int
	for _, s := range a.shards {
		if s.file != 0 {
			units++
			entries += len(s.entries)
			deferred += len(s.deferred)
		}
	}
	rb := newRecordBuilder(units, entries, deferred)
	rb.out = append(rb.out, Record{V: RecordV1, Meta: &MetaRecord{
		Allocator: KindShard, Alignment: a.cfg.Alignment, UnitCapacity: a.cfg.ShardCapacity,
		ShardCount: len(a.shards), Evicted: a.evicted, Aborted: a.aborted, Lost: a.lost,
	}})
	defs := make([]DeferredRecord, 0, deferred)
	var scratch []*entry
	for _, s := range a.shards {
		if s.file == 0 {
			continue
		}
		rb.unit(UnitRecord{ID: s.id, State: UnitOpen, File: s.file})
		scratch = sortEntries(s.entries, scratch[:0])
		for _, e := range scratch {
			rb.entry(s.id, e)
		}
		for _, d := range s.deferred {
			defs = append(defs, DeferredRecord{Unit: s.id, Offset: d.off, Length: d.len, ReleaseAt: d.releaseAt})
			rb.out = append(rb.out, Record{V: RecordV1, Deferred: &defs[len(defs)-1]})
		}
	}
	return rb.out
}

// Restore rebuilds the state into a new allocator and swaps it in only if
// every record is valid and no two ranges overlap.
func (a *shardAllocator) Restore(records []Record) error {
	return restoreFresh(a, newShardAllocator(a.cfg), records)
}

func (a *shardAllocator) restore(records []Record) error {
	m, err := metaOf(records, a.cfg, KindShard)
	if err != nil {
		return err
	}
	if m.NextBucketID != 0 || m.MaxBuckets != 0 || m.OpenBucket != 0 {
		return corruptf("shard meta record carries bucket fields")
	}
	a.evicted, a.aborted, a.lost = m.Evicted, m.Aborted, m.Lost
	var cur *shard
	var used []extent
	var prevEntryEnd int64
	seen := false
	finish := func() error {
		if cur == nil {
			return nil
		}
		if err := a.finishShard(cur, used); err != nil {
			return err
		}
		used = used[:0]
		return nil
	}
	return eachUnit(records, finish, func(at int, u *UnitRecord) error {
		switch {
		case u.ID >= uint64(len(a.shards)):
			return corruptf("record %d: shard %d of %d", at, u.ID, len(a.shards))
		case seen && u.ID <= cur.id:
			return corruptf("record %d: shard %d out of order after %d", at, u.ID, cur.id)
		case u.State != UnitOpen:
			return corruptf("record %d: shard %d has state %d, want open", at, u.ID, u.State)
		case u.File != FileNeeded && u.File != FileReady:
			return corruptf("record %d: shard %d has unknown file state %d", at, u.ID, u.File)
		case *u != UnitRecord{ID: u.ID, State: u.State, File: u.File}:
			return corruptf("record %d: shard %d carries bucket fields", at, u.ID)
		}
		cur, seen, prevEntryEnd = a.shards[u.ID], true, 0
		cur.file = u.File
		return nil
	}, func(at int, r *Record) error {
		switch {
		case r.Entry != nil:
			if cur == nil || r.Entry.Unit != cur.id {
				return corruptf("record %d: entry of shard %d is not after its shard record", at, r.Entry.Unit)
			}
			if len(cur.deferred) > 0 {
				return corruptf("record %d: entry of shard %d after its deferred ranges", at, cur.id)
			}
			if err := checkEntry(at, r.Entry, a.cfg.Alignment, a.cfg.ShardCapacity); err != nil {
				return err
			}
			if r.Entry.Offset < prevEntryEnd {
				return corruptf("record %d: entry at shard %d offset %d overlaps or precedes the previous entry (ends %d)", at, cur.id, r.Entry.Offset, prevEntryEnd)
			}
			e := &entry{key: r.Entry.Key, offset: r.Entry.Offset, size: r.Entry.Size, aligned: r.Entry.AlignedSize,
				pending: r.Entry.Pending, lastAccess: r.Entry.LastAccess}
			prevEntryEnd = e.end()
			cur.entries[e.offset] = e
			cur.live += e.aligned
			if e.pending {
				cur.pending++
			}
			used = append(used, extent{e.offset, e.aligned})
		case r.Deferred != nil:
			d := r.Deferred
			if cur == nil || d.Unit != cur.id {
				return corruptf("record %d: deferred range of shard %d is not after its shard record", at, d.Unit)
			}
			if d.Length <= 0 || d.Length%a.cfg.Alignment != 0 || d.Offset < 0 || d.Offset%a.cfg.Alignment != 0 || d.Offset > a.cfg.ShardCapacity-d.Length {
				return corruptf("record %d: deferred range %d+%d of shard %d is not an aligned range in [0, %d)", at, d.Offset, d.Length, cur.id, a.cfg.ShardCapacity)
			}
			cur.deferred = append(cur.deferred, deferredRange{off: d.Offset, len: d.Length, releaseAt: d.ReleaseAt})
			cur.deferredBytes += d.Length
			used = append(used, extent{d.Offset, d.Length})
		default:
			return corruptf("record %d: a shard allocator has no %s records", at, partName(*r))
		}
		return nil
	})
}

// finishShard checks that no two used ranges (entries and deferred) overlap
// and rebuilds the free list as their complement.
func (a *shardAllocator) finishShard(s *shard, used []extent) error {
	sorted := slices.Clone(used)
	slices.SortFunc(sorted, func(x, y extent) int { return cmp.Compare(x.off, y.off) })
	for i := 1; i < len(sorted); i++ {
		if p := sorted[i-1]; p.off+p.len > sorted[i].off {
			return corruptf("shard %d: ranges %d+%d and %d+%d overlap", s.id, p.off, p.len, sorted[i].off, sorted[i].len)
		}
	}
	s.free = complement(sorted, a.cfg.ShardCapacity)
	return nil
}
