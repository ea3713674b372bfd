package dfsalloc

import "sexton/api"

// bucket is one immutable bucket file's state. Every range below cursor is
// either a live entry or tombstoned: live + tombstoned == cursor, always.
type bucket struct {
	id             uint64
	path           string // BucketPath(id), kept so descriptors cost no formatting
	state          UnitState
	file           FileState
	cursor         int64
	live           int64 // bytes of live entries
	tombstoned     int64
	pending        int // live entries still pending
	lastAccess     int64
	version        uint64 // bumped on every change; an eviction plan names it
	deleteFailures uint32
	deletingSince  int64
	entries        map[int64]*entry // by offset
	// adoptEnd bounds the ends of the entries of a bucket created by
	// Adopt in this process (zero otherwise, and after a restore): an
	// adoption at or past it overlaps nothing, which keeps a rebuild that
	// adopts in offset order linear.
	adoptEnd int64
}

// bucketAllocator keeps the behaviour of Mooncake's immutable bucket
// allocator: append in request order, never rewind, never reuse a range or
// an id, reclaim only whole buckets.
type bucketAllocator struct {
	cfg        Config
	maxBuckets int
	nextID     uint64 // the id the next bucket gets; ids start at 1
	open       uint64 // the bucket appends go to; 0 if none
	buckets    map[uint64]*bucket
	ids        []uint64 // ids of existing buckets (open, sealed, deleting), ascending
	evicted    uint64
	aborted    uint64
	lost       uint64
}

func newBucketAllocator(cfg Config) *bucketAllocator {
	return &bucketAllocator{cfg: cfg, maxBuckets: cfg.MaxBucketCount, nextID: 1, buckets: map[uint64]*bucket{}}
}

func (a *bucketAllocator) Kind() string   { return KindBucket }
func (a *bucketAllocator) Config() Config { return a.cfg }

func (b *bucket) touch(now int64) {
	if now > b.lastAccess {
		b.lastAccess = now
	}
}

// Allocate appends one entry per request, in request order. If a request
// cannot be placed (the bucket count is at its maximum), every range the
// batch reserved becomes a tombstone, no descriptor is returned, and the
// buckets the batch sealed or created stay so: the cursor never rewinds.
func (a *bucketAllocator) Allocate(batch []Request, now int64) ([]api.DFSDescriptor, error) {
	aligned, err := validateBatch(batch, a.cfg.Alignment, a.cfg.BucketCapacity)
	if err != nil {
		return nil, err
	}
	type placed struct {
		b *bucket
		e *entry
	}
	reserved := make([]placed, 0, len(batch))
	out := make([]api.DFSDescriptor, 0, len(batch))
	for i, r := range batch {
		b, err := a.appendTarget(aligned[i], now)
		if err != nil {
			for _, p := range reserved {
				p.b.tombstone(p.e)
			}
			return nil, errorf(err, "request %d (%q) of %d", i, r.Key, len(batch))
		}
		e := &entry{key: r.Key, offset: b.cursor, size: r.Size, aligned: aligned[i], pending: true, lastAccess: now}
		b.entries[e.offset] = e
		b.cursor += e.aligned
		b.live += e.aligned
		b.pending++
		b.version++
		b.touch(now)
		if b.cursor == a.cfg.BucketCapacity {
			a.seal(b)
		}
		reserved = append(reserved, placed{b, e})
		out = append(out, descOf(KindBucket, b.path, b.id, e))
	}
	return out, nil
}

// appendTarget returns the open bucket if size fits behind its cursor;
// otherwise, if the maximum allows a new bucket, it seals the open one and
// opens the next id.
func (a *bucketAllocator) appendTarget(size, now int64) (*bucket, error) {
	if a.open != 0 {
		b := a.buckets[a.open]
		if b.cursor+size <= a.cfg.BucketCapacity {
			return b, nil
		}
	}
	// Refuse before sealing: a request that fails for lack of a new bucket
	// does not waste the open bucket's tail.
	if len(a.ids) >= a.maxBuckets {
		return nil, noSpacef("%d buckets (open, sealed or awaiting deletion) reach the maximum %d", len(a.ids), a.maxBuckets)
	}
	if a.nextID > MaxBucketID {
		return nil, noSpacef("bucket ids exhausted")
	}
	if a.open != 0 {
		a.seal(a.buckets[a.open])
	}
	b := &bucket{id: a.nextID, path: BucketPath(a.nextID), state: UnitOpen, file: FileNeeded, lastAccess: now, entries: map[int64]*entry{}}
	a.nextID++
	a.buckets[b.id] = b
	a.ids = append(a.ids, b.id) // ids only grow: stays sorted
	a.open = b.id
	return b, nil
}

func (a *bucketAllocator) seal(b *bucket) {
	b.state = UnitSealed
	b.version++
	if a.open == b.id {
		a.open = 0
	}
}

// tombstone drops e from the live set; its range stays below the cursor,
// never handed out again.
func (b *bucket) tombstone(e *entry) {
	delete(b.entries, e.offset)
	b.live -= e.aligned
	b.tombstoned += e.aligned
	if e.pending {
		b.pending--
	}
	b.version++
}

// find returns the live entry key and d name, or why there is none.
func (a *bucketAllocator) find(key string, d api.DFSDescriptor) (*bucket, *entry, error) {
	if err := checkKind("descriptor", d.Allocator, KindBucket); err != nil {
		return nil, nil, err
	}
	b := a.buckets[d.UnitID]
	if b == nil || b.state == UnitDeleting {
		return nil, nil, errorf(ErrUnknownEntry, "%q: bucket %d holds no live entries", key, d.UnitID)
	}
	e, err := entryAt(KindBucket, b.path, b.id, b.entries, key, d)
	return b, e, err
}

func (a *bucketAllocator) Commit(key string, d api.DFSDescriptor, now int64) error {
	b, e, err := a.find(key, d)
	if err != nil {
		return err
	}
	if !e.pending {
		return nil
	}
	e.pending = false
	b.pending--
	if now > e.lastAccess {
		e.lastAccess = now
	}
	b.touch(now)
	b.version++
	return nil
}

func (a *bucketAllocator) Free(key string, d api.DFSDescriptor, _ int64) error {
	b, e, err := a.find(key, d)
	if err != nil {
		return err
	}
	b.tombstone(e)
	return nil
}

func (a *bucketAllocator) Touch(key string, d api.DFSDescriptor, now int64) error {
	b, e, err := a.find(key, d)
	if err != nil {
		return err
	}
	if now > e.lastAccess {
		e.lastAccess = now
	}
	if now > b.lastAccess {
		b.lastAccess = now
		b.version++
	}
	return nil
}

// sortedEntries lists b's live entries by offset.
func (b *bucket) sortedEntries() []*entry {
	return sortEntries(b.entries, make([]*entry, 0, len(b.entries)))
}

func (b *bucket) refs() []EntryRef {
	es := b.sortedEntries()
	out := make([]EntryRef, len(es))
	path := b.path
	for i, e := range es {
		out[i] = EntryRef{Key: e.key, Desc: descOf(KindBucket, path, b.id, e)}
	}
	return out
}

// drop moves every live entry to the tombstoned bytes and starts the
// bucket's deletion: its metadata is gone, its file is not, and it still
// counts against the maximum.
func (a *bucketAllocator) drop(b *bucket, now int64) {
	b.tombstoned += b.live
	b.live, b.pending = 0, 0
	b.entries = map[int64]*entry{}
	if a.open == b.id {
		a.open = 0
	}
	b.state = UnitDeleting
	b.deletingSince = now
	b.version++
}
