package dfsalloc

import "sexton/api"

func (a *bucketAllocator) Stats() Stats {
	s := Stats{
		Allocator: KindBucket, Capacity: satMul(a.maxBuckets, a.cfg.BucketCapacity),
		MaxBuckets: a.maxBuckets, ChargedBuckets: len(a.ids), NextBucketID: a.nextID,
		Evicted: a.evicted, Aborted: a.aborted, Lost: a.lost,
		Units: make([]UnitStats, 0, len(a.ids)),
	}
	for _, id := range a.ids {
		b := a.buckets[id]
		u := UnitStats{
			Unit: id, Path: b.path, State: b.state, File: b.file,
			Capacity: a.cfg.BucketCapacity, Used: b.cursor, LiveBytes: b.live, DeadBytes: b.tombstoned,
			LiveEntries: len(b.entries), PendingEntries: b.pending, LastAccess: b.lastAccess,
			DeleteFailures: b.deleteFailures, DeletingSince: b.deletingSince,
		}
		if b.state == UnitDeleting {
			s.PendingDeletions++
		}
		s.add(u)
	}
	return s
}

func (a *bucketAllocator) meta() *MetaRecord {
	return &MetaRecord{
		Allocator: KindBucket, Alignment: a.cfg.Alignment, UnitCapacity: a.cfg.BucketCapacity,
		NextBucketID: a.nextID, MaxBuckets: a.maxBuckets, OpenBucket: a.open,
		Evicted: a.evicted, Aborted: a.aborted, Lost: a.lost,
	}
}

func (a *bucketAllocator) Records() []Record {
	n := 0
	for _, id := range a.ids {
		n += len(a.buckets[id].entries)
	}
	rb := newRecordBuilder(len(a.ids), n, 0)
	rb.out = append(rb.out, Record{V: RecordV1, Meta: a.meta()})
	var scratch []*entry
	for _, id := range a.ids {
		b := a.buckets[id]
		rb.unit(UnitRecord{
			ID: id, State: b.state, File: b.file, Cursor: b.cursor, Tombstoned: b.tombstoned,
			LastAccess: b.lastAccess, Version: b.version, DeleteFailures: b.deleteFailures,
			DeletingSince: b.deletingSince,
		})
		scratch = sortEntries(b.entries, scratch[:0])
		for _, e := range scratch {
			rb.entry(id, e)
		}
	}
	return rb.out
}

// Restore rebuilds the state from records into a new allocator, checking
// everything that Records guarantees, and replaces a's state only if all of
// it holds.
func (a *bucketAllocator) Restore(records []Record) error {
	return restoreFresh(a, newBucketAllocator(a.cfg), records)
}

// restoreFresh restores records into fresh, a new allocator of a's kind
// and configuration, and replaces *a with it only if every record holds.
func restoreFresh[A any, P interface {
	*A
	restore([]Record) error
}](a, fresh P, records []Record) error {
	if err := fresh.restore(records); err != nil {
		return err
	}
	*a = *fresh
	return nil
}

func (a *bucketAllocator) restore(records []Record) error {
	m, err := metaOf(records, a.cfg, KindBucket)
	if err != nil {
		return err
	}
	if m.NextBucketID < 1 || m.NextBucketID > MaxBucketID+1 {
		return corruptf("next bucket id %d is not in [1, %d]", m.NextBucketID, uint64(MaxBucketID)+1)
	}
	if m.MaxBuckets <= 0 || m.MaxBuckets > MaxBucketCountLimit {
		return corruptf("max buckets %d is not in [1, %d]", m.MaxBuckets, MaxBucketCountLimit)
	}
	a.nextID, a.maxBuckets, a.open = m.NextBucketID, m.MaxBuckets, m.OpenBucket
	a.evicted, a.aborted, a.lost = m.Evicted, m.Aborted, m.Lost
	var cur *bucket
	var prevEnd int64
	finish := func() error {
		if cur == nil {
			return nil
		}
		if cur.live+cur.tombstoned != cur.cursor {
			return corruptf("bucket %d: live %d + tombstoned %d bytes != cursor %d", cur.id, cur.live, cur.tombstoned, cur.cursor)
		}
		return nil
	}
	err = eachUnit(records, finish, func(at int, u *UnitRecord) error {
		b, err := a.restoreBucket(at, u)
		if err != nil {
			return err
		}
		cur, prevEnd = b, 0
		return nil
	}, func(at int, r *Record) error {
		switch {
		case r.Entry == nil:
			return corruptf("record %d: a bucket allocator has no %s records", at, partName(*r))
		case cur == nil:
			return corruptf("record %d: entry before any bucket", at)
		}
		return a.restoreEntry(at, cur, r.Entry, &prevEnd)
	})
	if err != nil {
		return err
	}
	if a.open != 0 {
		b := a.buckets[a.open]
		if b == nil || b.state != UnitOpen {
			return corruptf("open bucket %d is not an open bucket of the records", a.open)
		}
	}
	for _, id := range a.ids {
		if b := a.buckets[id]; b.state == UnitOpen && id != a.open {
			return corruptf("bucket %d is open but the open bucket is %d", id, a.open)
		}
	}
	return nil
}

func (a *bucketAllocator) restoreBucket(at int, u *UnitRecord) (*bucket, error) {
	switch {
	case u.ID < 1 || u.ID >= a.nextID:
		return nil, corruptf("record %d: bucket id %d is not below the next id %d", at, u.ID, a.nextID)
	case len(a.ids) > 0 && u.ID <= a.ids[len(a.ids)-1]:
		return nil, corruptf("record %d: bucket id %d out of order after %d", at, u.ID, a.ids[len(a.ids)-1])
	case u.State != UnitOpen && u.State != UnitSealed && u.State != UnitDeleting:
		return nil, corruptf("record %d: bucket %d has unknown state %d", at, u.ID, u.State)
	case u.File != FileNeeded && u.File != FileReady:
		return nil, corruptf("record %d: bucket %d has unknown file state %d", at, u.ID, u.File)
	case u.Cursor < 0 || u.Cursor > a.cfg.BucketCapacity || u.Cursor%a.cfg.Alignment != 0:
		return nil, corruptf("record %d: bucket %d cursor %d is not an aligned offset in [0, %d]", at, u.ID, u.Cursor, a.cfg.BucketCapacity)
	case u.Tombstoned < 0 || u.Tombstoned > u.Cursor:
		return nil, corruptf("record %d: bucket %d tombstoned bytes %d not in [0, cursor %d]", at, u.ID, u.Tombstoned, u.Cursor)
	}
	b := &bucket{
		id: u.ID, path: BucketPath(u.ID), state: u.State, file: u.File, cursor: u.Cursor, tombstoned: u.Tombstoned,
		lastAccess: u.LastAccess, version: u.Version, deleteFailures: u.DeleteFailures,
		deletingSince: u.DeletingSince, entries: map[int64]*entry{},
	}
	a.buckets[b.id] = b
	a.ids = append(a.ids, b.id)
	return b, nil
}

func (a *bucketAllocator) restoreEntry(at int, b *bucket, r *EntryRecord, prevEnd *int64) error {
	if r.Unit != b.id {
		return corruptf("record %d: entry of bucket %d follows bucket %d", at, r.Unit, b.id)
	}
	if b.state == UnitDeleting {
		return corruptf("record %d: entry in deleting bucket %d", at, b.id)
	}
	if err := checkEntry(at, r, a.cfg.Alignment, a.cfg.BucketCapacity); err != nil {
		return err
	}
	if r.Offset < *prevEnd {
		return corruptf("record %d: entry at bucket %d offset %d overlaps or precedes the previous entry (ends %d)", at, b.id, r.Offset, *prevEnd)
	}
	if r.Offset+r.AlignedSize > b.cursor {
		return corruptf("record %d: bucket %d cursor %d is behind its entry at %d+%d", at, b.id, b.cursor, r.Offset, r.AlignedSize)
	}
	e := &entry{key: r.Key, offset: r.Offset, size: r.Size, aligned: r.AlignedSize, pending: r.Pending, lastAccess: r.LastAccess}
	b.entries[e.offset] = e
	b.live += e.aligned
	if e.pending {
		b.pending++
	}
	*prevEnd = e.end()
	return nil
}

// checkEntry: a valid key, and an aligned range inside the unit whose
// aligned size is exactly the size rounded up.
func checkEntry(at int, r *EntryRecord, alignment, capacity int64) error {
	if err := api.ValidKey(r.Key); err != nil {
		return corruptf("record %d: %v", at, err)
	}
	switch {
	case r.Size < 0 || r.Size > capacity:
		return corruptf("record %d: entry %q size %d not in [0, %d]", at, r.Key, r.Size, capacity)
	case r.AlignedSize != alignUp(r.Size, alignment):
		return corruptf("record %d: entry %q aligned size %d, want %d", at, r.Key, r.AlignedSize, alignUp(r.Size, alignment))
	case r.Offset < 0 || r.Offset%alignment != 0 || r.Offset > capacity-r.AlignedSize:
		return corruptf("record %d: entry %q offset %d is not an aligned offset with room for %d bytes", at, r.Key, r.Offset, r.AlignedSize)
	}
	return nil
}

// checkMeta: the first record is a meta record agreeing with cfg.
// metaOf is the meta record that starts the records of a kind allocator,
// checked against cfg (checkMeta).
func metaOf(records []Record, cfg Config, kind string) (*MetaRecord, error) {
	if len(records) == 0 {
		return nil, corruptf("no records: a %s allocator writes at least its meta record", kind)
	}
	if err := checkMeta(records[0], cfg); err != nil {
		return nil, err
	}
	return records[0].Meta, nil
}

func checkMeta(r Record, cfg Config) error {
	if err := r.check(); err != nil {
		return errorf(err, "record 0")
	}
	m := r.Meta
	if m == nil {
		return corruptf("record 0 is a %s record, want meta", partName(r))
	}
	switch {
	case m.Allocator != cfg.Allocator:
		return corruptf("records are of the %q allocator but %s is %q", m.Allocator, SettingAllocator, cfg.Allocator)
	case m.Alignment != cfg.Alignment:
		return corruptf("records have alignment %d but %s is %d", m.Alignment, SettingAlignment, cfg.Alignment)
	case m.UnitCapacity != cfg.UnitCapacity():
		return corruptf("records have unit capacity %d but this master is configured with %d", m.UnitCapacity, cfg.UnitCapacity())
	case cfg.Allocator == KindShard && m.ShardCount != cfg.ShardCount:
		return corruptf("records have %d shards but %s is %d", m.ShardCount, SettingShardCount, cfg.ShardCount)
	case cfg.Allocator == KindBucket && m.ShardCount != 0:
		return corruptf("bucket records name a shard count %d", m.ShardCount)
	}
	return nil
}

func partName(r Record) string {
	switch {
	case r.Meta != nil:
		return "meta"
	case r.Unit != nil:
		return "unit"
	case r.Entry != nil:
		return "entry"
	case r.Deferred != nil:
		return "deferred"
	}
	return "empty"
}
