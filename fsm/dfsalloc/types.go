package dfsalloc

import (
	"sexton/api"
	"sexton/internal/enum"
)

// Request asks for space for one object's DFS replica.
type Request struct {
	Key  string `msgpack:"key"`
	Size int64  `msgpack:"size"`
}

// EntryRef names one entry: the object key and its exact descriptor.
type EntryRef struct {
	Key  string            `msgpack:"key"`
	Desc api.DFSDescriptor `msgpack:"desc"`
}

// UnitState is the lifecycle state of a bucket (shards are always Open).
type UnitState uint8

const (
	// UnitOpen: the bucket takes appends (a shard: always).
	UnitOpen UnitState = 1
	// UnitSealed: full, or skipped because a request did not fit; no appends.
	UnitSealed UnitState = 2
	// UnitDeleting: evicted or lost; its metadata is gone, its file awaits
	// deletion and it still counts against MaxBucketCount.
	UnitDeleting UnitState = 3
)

var unitStateNames = []string{UnitOpen: "open", UnitSealed: "sealed", UnitDeleting: "deleting"}

func (s UnitState) String() string { return enum.Name(unitStateNames, s, "unknown") }

// FileState says whether a unit's file exists as far as the state knows.
type FileState uint8

const (
	// FileNeeded: the file must be created (and preallocated) by the leader.
	FileNeeded FileState = 1
	// FileReady: the leader confirmed the file exists.
	FileReady FileState = 2
)

var fileStateNames = []string{FileNeeded: "needed", FileReady: "ready"}

func (s FileState) String() string { return enum.Name(fileStateNames, s, "unknown") }

// FileOpKind is what the leader must do to a unit's file.
type FileOpKind uint8

const (
	// FileCreate: create the file and preallocate it to Size bytes. Existing
	// content is kept if the file already has exactly that size (a retry).
	FileCreate FileOpKind = 1
	// FileDelete: unlink the file, not before NotBefore. A missing file is
	// success.
	FileDelete FileOpKind = 2
)

var fileOpKindNames = []string{FileCreate: "create", FileDelete: "delete"}

func (k FileOpKind) String() string { return enum.Name(fileOpKindNames, k, "unknown") }

// FileOp is one file side effect the state is waiting for.
type FileOp struct {
	Kind      FileOpKind `msgpack:"kind"`
	Allocator string     `msgpack:"alloc"`
	Unit      uint64     `msgpack:"unit"`
	Path      string     `msgpack:"path"`
	Size      int64      `msgpack:"size"`       // create: preallocation size
	NotBefore int64      `msgpack:"not_before"` // delete: unix nanos; readers of the evicted entries drain meanwhile
	Failures  uint32     `msgpack:"failures"`   // delete attempts reported failed so far
}

// EvictionPlan is computed by the leader (PlanEviction, read-only) and
// carried in a DFSEvict command; ApplyEviction re-validates it.
type EvictionPlan struct {
	Allocator  string              `msgpack:"alloc"`
	Candidates []EvictionCandidate `msgpack:"cands"`
}

// EvictionCandidate is one unit to reclaim from. For a bucket, Version is
// the bucket's version at planning and Entries is empty: the whole bucket
// goes, and any change to it since (an append, a commit, a free, a touch)
// aborts the candidate. For a shard, Entries lists the entries to evict,
// each validated on its own.
type EvictionCandidate struct {
	Unit    uint64     `msgpack:"unit"`
	Version uint64     `msgpack:"ver,omitempty"`
	Entries []EntryRef `msgpack:"entries,omitempty"`
}

// Bounds on a plan, so one DFSEvict command stays small.
const (
	MaxPlanCandidates = 256
	MaxPlanEntries    = 4096
	// MaxBatch bounds one Allocate batch.
	MaxBatch = api.MaxBatchKeys
)

// UnitStats describes one bucket or shard.
type UnitStats struct {
	Unit           uint64    `msgpack:"unit"`
	Path           string    `msgpack:"path"`
	State          UnitState `msgpack:"state"`
	File           FileState `msgpack:"file"`
	Capacity       int64     `msgpack:"cap"`
	Used           int64     `msgpack:"used"` // bucket: the append cursor; shard: live + deferred bytes
	LiveBytes      int64     `msgpack:"live"`
	DeadBytes      int64     `msgpack:"dead"` // bucket: tombstoned; shard: deferred, not yet reusable
	LiveEntries    int       `msgpack:"entries"`
	PendingEntries int       `msgpack:"pending"`
	LastAccess     int64     `msgpack:"last_access"`
	DeleteFailures uint32    `msgpack:"delete_failures,omitempty"`
	DeletingSince  int64     `msgpack:"deleting_since,omitempty"`
}

// Stats summarizes an allocator for `sexton operator dfs status`.
type Stats struct {
	Allocator        string      `msgpack:"alloc"`
	Capacity         int64       `msgpack:"cap"` // shard: count × capacity; bucket: MaxBuckets × capacity
	Used             int64       `msgpack:"used"`
	LiveBytes        int64       `msgpack:"live"`
	DeadBytes        int64       `msgpack:"dead"`
	LiveEntries      int         `msgpack:"entries"`
	MaxBuckets       int         `msgpack:"max_buckets,omitempty"`
	ChargedBuckets   int         `msgpack:"charged_buckets,omitempty"` // open + sealed + deleting
	PendingDeletions int         `msgpack:"pending_deletions"`
	NextBucketID     uint64      `msgpack:"next_bucket,omitempty"`
	Evicted          uint64      `msgpack:"evicted"` // units (bucket) or entries (shard) evicted so far
	Aborted          uint64      `msgpack:"aborted"` // plan candidates or entries refused at apply
	Lost             uint64      `msgpack:"lost"`    // units marked lost
	Units            []UnitStats `msgpack:"units"`   // by unit id
}

// checkPlan refuses a plan another kind of allocator made or one of more
// than MaxPlanCandidates candidates.
func checkPlan(plan EvictionPlan, kind string) error {
	if err := checkKind("plan", plan.Allocator, kind); err != nil {
		return err
	}
	if len(plan.Candidates) > MaxPlanCandidates {
		return invalidf("plan of %d candidates exceeds %d", len(plan.Candidates), MaxPlanCandidates)
	}
	return nil
}

// checkKind refuses a plan or a descriptor (what) made by allocator got
// when given to the allocator of kind.
func checkKind(what, got, kind string) error {
	if got != kind {
		return errorf(ErrWrongAllocator, "%s of allocator %q given to the %s allocator", what, got, kind)
	}
	return nil
}

// entryAt is the live entry at d's offset of unit id (kind, path), which
// must be the entry d describes for key.
func entryAt(kind, path string, id uint64, entries map[int64]*entry, key string, d api.DFSDescriptor) (*entry, error) {
	e := entries[d.Offset]
	if e == nil {
		return nil, errorf(ErrUnknownEntry, "%q: no live entry at %s %d offset %d", key, kind, d.UnitID, d.Offset)
	}
	if !sameAsEntry(kind, path, id, e, key, d) {
		return nil, errorf(ErrDescriptorMismatch, "%q %+v: %s %d offset %d holds %q size %d", key, d, kind, id, e.offset, e.key, e.size)
	}
	return e, nil
}

// add counts unit u in the allocator's totals and lists it.
func (s *Stats) add(u UnitStats) {
	s.Used += u.Used
	s.LiveBytes += u.LiveBytes
	s.DeadBytes += u.DeadBytes
	s.LiveEntries += u.LiveEntries
	s.Units = append(s.Units, u)
}
