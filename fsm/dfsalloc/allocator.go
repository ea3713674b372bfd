package dfsalloc

import (
	"cmp"
	"slices"

	"sexton/api"
)

// Allocator is the DFS space of the replicated state. Mutating methods are
// called only from FSM Apply, with the command's now (unix nanoseconds,
// chosen by the leader); they change nothing when they return an error,
// except that a failed bucket batch keeps its tombstones (as the ancestor
// does: the cursor never rewinds) and a failed shard batch may have released
// deferred ranges whose time had come (time passing, not a change of
// meaning). Either way the change is a function of the state and the
// command, so every master makes the same one.
type Allocator interface {
	// Kind is KindShard or KindBucket.
	Kind() string
	// Config is the configuration the allocator was built with (MaxBucketCount
	// as set at construction; the current maximum is in Stats).
	Config() Config

	// Allocate reserves space for every request of the batch, in order, and
	// returns one PENDING descriptor per request, or an error and none.
	Allocate(batch []Request, now int64) ([]api.DFSDescriptor, error)
	// Commit makes a pending entry live (PutEnd). Committing an entry that is
	// already committed with the same key and descriptor is a no-op.
	Commit(key string, d api.DFSDescriptor, now int64) error
	// Free releases a pending or committed entry (PutRevoke, Remove, the
	// superseded incarnation of an overwrite). A bucket entry becomes a
	// tombstone; a shard range is reusable once now+DeferredFreeSeconds has
	// passed.
	Free(key string, d api.DFSDescriptor, now int64) error
	// Adopt registers a committed entry of key at d that a rebuild found
	// on the DFS root (adopt.go); an identical entry is a no-op, an
	// overlapping one is refused.
	Adopt(key string, d api.DFSDescriptor, now int64) error
	// Touch records a read of the entry at now, for LRU eviction. It is
	// replicated state: call it only from an applied command.
	Touch(key string, d api.DFSDescriptor, now int64) error

	// PlanEviction (leader, read-only) picks what to reclaim at now: fully
	// dead sealed buckets always, then, with eviction enabled and usage at
	// or above the high watermark, least recently used units (bucket) or
	// entries (shard) until usage would fall to the low watermark. Entries
	// for which leased returns true are not evicted (a bucket holding one is
	// skipped whole). leased may be nil.
	PlanEviction(now int64, leased func(key string) bool) EvictionPlan
	// ApplyEviction re-validates plan against the current state and evicts
	// what still qualifies: a bucket only if unchanged since planning, not
	// pending, and check accepts every live entry (all or nothing per
	// bucket); a shard entry if its key and descriptor match exactly, it is
	// committed and check accepts it. check is the FSM's own test that the
	// object still names exactly this descriptor and is not being processed;
	// nil accepts all. It returns the evicted entries sorted by unit and
	// offset, which the FSM must drop from their objects.
	ApplyEviction(plan EvictionPlan, now int64, check func(EntryRef) bool) ([]EntryRef, error)

	// PendingFileOps lists the file work the state waits for, by unit.
	PendingFileOps() []FileOp
	// ConfirmFileCreated records that the unit's file exists. Repeating it is
	// a no-op.
	ConfirmFileCreated(unit uint64) error
	// ConfirmFileDeleted records that a deleting bucket's file is gone; only
	// now does the bucket stop counting against MaxBucketCount.
	ConfirmFileDeleted(unit uint64) error
	// FileDeleteFailed records a failed deletion; the bucket stays charged
	// and its delete stays pending, to be retried.
	FileDeleteFailed(unit uint64, now int64) error
	// MarkLost is told that a file the state needs is missing. Every entry in
	// the unit (pending ones included) is dropped and returned, sorted by
	// offset, so the FSM drops those replicas. A bucket goes to Deleting; a
	// shard's ranges are deferred and its file must be created again.
	MarkLost(unit uint64, now int64) ([]EntryRef, error)
	// SetMaxBuckets changes the bucket maximum (bucket allocator only). A
	// maximum below the current count only stops new buckets.
	SetMaxBuckets(n int) error

	// Stats describes every unit and the totals.
	Stats() Stats
	// Records returns the whole state as snapshot records, in canonical order.
	Records() []Record
	// Restore replaces the whole state by records, or changes nothing and
	// returns an error wrapping ErrCorruptRecords that names the problem.
	Restore(records []Record) error
}

// New validates cfg and returns an empty allocator of the kind it selects.
func New(cfg Config) (Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Allocator == KindBucket {
		return newBucketAllocator(cfg), nil
	}
	return newShardAllocator(cfg), nil
}

// entry is one allocated range. Its descriptor is derived from the unit and
// the allocator, so the state stores no path strings.
type entry struct {
	key        string
	offset     int64
	size       int64
	aligned    int64
	pending    bool
	lastAccess int64
}

func (e *entry) end() int64 { return e.offset + e.aligned }

func descOf(kind, path string, unit uint64, e *entry) api.DFSDescriptor {
	return api.DFSDescriptor{
		Allocator: kind, Path: path, UnitID: unit,
		Offset: e.offset, Size: e.size, AlignedSize: e.aligned,
	}
}

// validateBatch checks every request before anything is reserved, so a
// malformed batch changes nothing.
func validateBatch(batch []Request, alignment, capacity int64) ([]int64, error) {
	if len(batch) == 0 {
		return nil, invalidf("empty batch")
	}
	if len(batch) > MaxBatch {
		return nil, invalidf("batch of %d requests exceeds %d", len(batch), MaxBatch)
	}
	aligned := make([]int64, len(batch))
	for i, r := range batch {
		if err := api.ValidKey(r.Key); err != nil {
			return nil, invalidf("request %d: %v", i, err)
		}
		if r.Size < 0 || r.Size > capacity {
			return nil, invalidf("request %d (%q): size %d is not in [0, %d]", i, r.Key, r.Size, capacity)
		}
		aligned[i] = alignUp(r.Size, alignment)
	}
	return aligned, nil
}

// sameAsEntry reports whether key and d name exactly entry e of unit.
func sameAsEntry(kind, path string, unit uint64, e *entry, key string, d api.DFSDescriptor) bool {
	return e.key == key && d == descOf(kind, path, unit, e)
}

// sortEntries appends the entries of m to dst, sorted by offset.
func sortEntries(m map[int64]*entry, dst []*entry) []*entry {
	for _, e := range m {
		dst = append(dst, e)
	}
	slices.SortFunc(dst, func(x, y *entry) int { return cmp.Compare(x.offset, y.offset) })
	return dst
}
