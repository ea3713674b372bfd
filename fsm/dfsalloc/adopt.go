package dfsalloc

import (
	"sort"

	"sexton/api"
)

// checkAdopted refuses a descriptor no allocator of this configuration can
// have handed out: another allocator, a path that is not the unit's, an
// offset off the alignment, an aligned size that is not the size's, or a
// range past the unit's capacity.
func checkAdopted(cfg Config, key string, d api.DFSDescriptor, path string, capacity int64) error {
	switch {
	case api.ValidKey(key) != nil:
		return invalidf("adopt: %v", api.ValidKey(key))
	case d.Allocator != cfg.Allocator:
		return errorf(ErrWrongAllocator, "adopt %q: descriptor of allocator %q, this cluster's is %q", key, d.Allocator, cfg.Allocator)
	case d.Path != path:
		return invalidf("adopt %q: unit %d's file is %s, not %s", key, d.UnitID, path, d.Path)
	case d.Size < 0 || d.Size > capacity || d.AlignedSize != alignUp(d.Size, cfg.Alignment):
		return invalidf("adopt %q: size %d with aligned size %d does not fit alignment %d and capacity %d", key, d.Size, d.AlignedSize, cfg.Alignment, capacity)
	case d.Offset < 0 || d.Offset%cfg.Alignment != 0 || d.Offset > capacity-d.AlignedSize:
		return invalidf("adopt %q: offset %d with %d bytes is not an aligned range of a %d-byte unit", key, d.Offset, d.AlignedSize, capacity)
	}
	return nil
}

// Adopt registers a committed entry of key at d (a rebuild adopting a
// replica from the DFS root's records): a bucket it names is created
// sealed with its file ready, the rest of its range counted tombstoned, so
// no later allocation ever lands in it; a shard range leaves the free
// list. Adopting exactly an entry that exists is a no-op; a range that
// overlaps another entry, or a deleting bucket, is refused.
func (a *bucketAllocator) Adopt(key string, d api.DFSDescriptor, now int64) error {
	if d.UnitID == 0 || d.UnitID > MaxBucketID {
		return invalidf("adopt %q: bucket id %d out of range", key, d.UnitID)
	}
	if err := checkAdopted(a.cfg, key, d, BucketPath(d.UnitID), a.cfg.BucketCapacity); err != nil {
		return err
	}
	b := a.buckets[d.UnitID]
	if b == nil {
		if len(a.ids) >= a.maxBuckets {
			return noSpacef("adopt %q: %d buckets reach the maximum %d (%s)", key, len(a.ids), a.maxBuckets, SettingMaxBucketCount)
		}
		b = &bucket{id: d.UnitID, path: BucketPath(d.UnitID), state: UnitSealed, file: FileReady, cursor: a.cfg.BucketCapacity,
			tombstoned: a.cfg.BucketCapacity, lastAccess: now, entries: map[int64]*entry{}, adoptEnd: 1}
		if a.nextID <= b.id {
			// Ids are never reused: the bucket open for appends (if any)
			// keeps its id, and new ones come after every adopted one.
			a.nextID = b.id + 1
		}
		a.buckets[b.id] = b
		i := sort.Search(len(a.ids), func(i int) bool { return a.ids[i] > b.id })
		a.ids = append(a.ids, 0)
		copy(a.ids[i+1:], a.ids[i:])
		a.ids[i] = b.id
	}
	if b.state == UnitDeleting {
		return errorf(ErrWrongState, "adopt %q: bucket %d is being deleted", key, b.id)
	}
	if e := b.entries[d.Offset]; e != nil && sameAsEntry(KindBucket, b.path, b.id, e, key, d) {
		return nil
	}
	if d.Offset+d.AlignedSize > b.cursor {
		return errorf(ErrDescriptorMismatch, "adopt %q: bucket %d's range [%d, %d) is past its cursor %d", key, b.id, d.Offset, d.Offset+d.AlignedSize, b.cursor)
	}
	// adoptEnd is one past the largest end adopted (zero: unknown).
	if fast := b.adoptEnd > 0 && d.Offset >= b.adoptEnd-1; !fast {
		if other := overlapping(b.entries, d.Offset, d.AlignedSize); other != nil {
			return errorf(ErrDescriptorMismatch, "adopt %q: bucket %d range [%d, %d) overlaps %q at %d", key, b.id, d.Offset, d.Offset+d.AlignedSize, other.key, other.offset)
		}
	}
	b.entries[d.Offset] = &entry{key: key, offset: d.Offset, size: d.Size, aligned: d.AlignedSize, lastAccess: now}
	if b.adoptEnd > 0 {
		b.adoptEnd = max(b.adoptEnd, d.Offset+d.AlignedSize+1)
	}
	b.live += d.AlignedSize
	b.tombstoned -= d.AlignedSize
	b.touch(now)
	b.version++
	return nil
}

// Adopt: see bucketAllocator.Adopt. The shard must be the key's.
func (a *shardAllocator) Adopt(key string, d api.DFSDescriptor, now int64) error {
	if d.UnitID >= uint64(len(a.shards)) {
		return invalidf("adopt %q: shard %d of %d does not exist", key, d.UnitID, len(a.shards))
	}
	s := a.shards[d.UnitID]
	if err := checkAdopted(a.cfg, key, d, s.path, a.cfg.ShardCapacity); err != nil {
		return err
	}
	if want := ShardOf(key, a.cfg.ShardCount); uint64(want) != d.UnitID {
		return invalidf("adopt %q: the key's shard is %d, not %d", key, want, d.UnitID)
	}
	if e := s.entries[d.Offset]; e != nil && sameAsEntry(KindShard, s.path, s.id, e, key, d) {
		return nil
	}
	if !s.free.carve(d.Offset, d.AlignedSize) {
		return errorf(ErrDescriptorMismatch, "adopt %q: shard %d range [%d, %d) is not free (another entry or a deferred range holds part of it)", key, s.id, d.Offset, d.Offset+d.AlignedSize)
	}
	s.entries[d.Offset] = &entry{key: key, offset: d.Offset, size: d.Size, aligned: d.AlignedSize, lastAccess: now}
	s.live += d.AlignedSize
	s.file = FileReady
	return nil
}

// overlapping returns an entry of m that shares a byte with [off, off+n),
// or nil.
func overlapping(m map[int64]*entry, off, n int64) *entry {
	for _, e := range m {
		if e.offset < off+n && off < e.end() {
			return e
		}
	}
	return nil
}

// carve takes [off, off+size) out of the free list if one extent holds it
// all, and reports whether it did.
func (f *freeList) carve(off, size int64) bool {
	l := *f
	i := sort.Search(len(l), func(i int) bool { return l[i].off+l[i].len > off })
	if i == len(l) || l[i].off > off || l[i].off+l[i].len < off+size {
		return false
	}
	x := l[i]
	var parts []extent
	if x.off < off {
		parts = append(parts, extent{x.off, off - x.off})
	}
	if end := off + size; end < x.off+x.len {
		parts = append(parts, extent{end, x.off + x.len - end})
	}
	out := make(freeList, 0, len(l)+1)
	out = append(out, l[:i]...)
	out = append(out, parts...)
	*f = append(out, l[i+1:]...)
	return true
}
