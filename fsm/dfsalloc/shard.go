package dfsalloc

import (
	"slices"

	"sexton/api"
)

// deferredRange is a freed range that no allocation may hand out before
// releaseAt, so a reader still holding the old descriptor cannot see another
// object's bytes.
type deferredRange struct{ off, len, releaseAt int64 }

// shard is one dfs_shard_<NN>.data file's state.
type shard struct {
	id            uint64
	path          string
	file          FileState // 0 until the first allocation needs the file
	free          freeList
	deferred      []deferredRange // in the order they were freed
	entries       map[int64]*entry
	live          int64
	deferredBytes int64
	pending       int
}

type shardAllocator struct {
	cfg     Config
	shards  []*shard
	evicted uint64
	aborted uint64
	lost    uint64
}

func newShardAllocator(cfg Config) *shardAllocator {
	a := &shardAllocator{cfg: cfg, shards: make([]*shard, cfg.ShardCount)}
	for i := range a.shards {
		a.shards[i] = &shard{
			id: uint64(i), path: ShardPath(i, cfg.ShardCount),
			free: freeList{{0, cfg.ShardCapacity}}, entries: map[int64]*entry{},
		}
	}
	return a
}

func (a *shardAllocator) Kind() string   { return KindShard }
func (a *shardAllocator) Config() Config { return a.cfg }

// release makes every deferred range whose time has come reusable. It stops
// at the first range still deferred: ranges are queued in free order, and
// if a later leader's clock ran behind, a range queued after it may carry an
// earlier time; waiting for it too is only late, never early.
func (s *shard) release(now int64) {
	n := 0
	for n < len(s.deferred) && s.deferred[n].releaseAt <= now {
		d := s.deferred[n]
		s.free.give(d.off, d.len)
		s.deferredBytes -= d.len
		n++
	}
	if n > 0 {
		s.deferred = slices.Delete(s.deferred, 0, n)
	}
}

// Allocate places each request in its key's shard by first fit. If one does
// not fit, the ranges the batch took go back to the free lists (nobody ever
// saw them) and no descriptor is returned.
func (a *shardAllocator) Allocate(batch []Request, now int64) ([]api.DFSDescriptor, error) {
	aligned, err := validateBatch(batch, a.cfg.Alignment, a.cfg.ShardCapacity)
	if err != nil {
		return nil, err
	}
	type placed struct {
		s *shard
		e *entry
	}
	reserved := make([]placed, 0, len(batch))
	for i, r := range batch {
		s := a.shards[ShardOf(r.Key, a.cfg.ShardCount)]
		s.release(now)
		off, ok := s.free.take(aligned[i])
		if !ok {
			for j := len(reserved) - 1; j >= 0; j-- {
				p := reserved[j]
				delete(p.s.entries, p.e.offset)
				p.s.live -= p.e.aligned
				p.s.pending--
				p.s.free.give(p.e.offset, p.e.aligned)
			}
			return nil, noSpacef("request %d (%q) of %d: shard %d has no free range of %d bytes (live %d, deferred %d of %d)",
				i, r.Key, len(batch), s.id, aligned[i], s.live, s.deferredBytes, a.cfg.ShardCapacity)
		}
		e := &entry{key: r.Key, offset: off, size: r.Size, aligned: aligned[i], pending: true, lastAccess: now}
		s.entries[off] = e
		s.live += e.aligned
		s.pending++
		reserved = append(reserved, placed{s, e})
	}
	out := make([]api.DFSDescriptor, len(reserved))
	for i, p := range reserved {
		if p.s.file == 0 {
			p.s.file = FileNeeded
		}
		out[i] = descOf(KindShard, p.s.path, p.s.id, p.e)
	}
	return out, nil
}

func (a *shardAllocator) find(key string, d api.DFSDescriptor) (*shard, *entry, error) {
	if err := checkKind("descriptor", d.Allocator, KindShard); err != nil {
		return nil, nil, err
	}
	if d.UnitID >= uint64(len(a.shards)) {
		return nil, nil, errorf(ErrUnknownEntry, "%q: shard %d of %d does not exist", key, d.UnitID, len(a.shards))
	}
	s := a.shards[d.UnitID]
	e, err := entryAt(KindShard, s.path, s.id, s.entries, key, d)
	return s, e, err
}

func (a *shardAllocator) Commit(key string, d api.DFSDescriptor, now int64) error {
	s, e, err := a.find(key, d)
	if err != nil {
		return err
	}
	if e.pending {
		e.pending = false
		s.pending--
	}
	if now > e.lastAccess {
		e.lastAccess = now
	}
	return nil
}

func (a *shardAllocator) Free(key string, d api.DFSDescriptor, now int64) error {
	s, e, err := a.find(key, d)
	if err != nil {
		return err
	}
	a.deferFree(s, e, now)
	return nil
}

// deferFree drops e and queues its range for reuse after the deferral.
func (a *shardAllocator) deferFree(s *shard, e *entry, now int64) {
	delete(s.entries, e.offset)
	s.live -= e.aligned
	if e.pending {
		s.pending--
	}
	s.deferred = append(s.deferred, deferredRange{off: e.offset, len: e.aligned, releaseAt: satAdd(now, a.cfg.deferNanos())})
	s.deferredBytes += e.aligned
}

func (a *shardAllocator) Touch(key string, d api.DFSDescriptor, now int64) error {
	_, e, err := a.find(key, d)
	if err != nil {
		return err
	}
	if now > e.lastAccess {
		e.lastAccess = now
	}
	return nil
}

func (s *shard) sortedEntries() []*entry {
	return sortEntries(s.entries, make([]*entry, 0, len(s.entries)))
}
