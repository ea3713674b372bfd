package fsm

import (
	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// DFS command types (docs/DESIGN.md §9, fsm/dfsalloc/DESIGN.md "Wiring"). The
// allocator is replicated state, so everything that changes it is a
// command; the leader fills in every time and every plan.
const (
	CmdDFSConfigure     CommandType = 11
	CmdDFSTouch         CommandType = 12
	CmdDFSEvict         CommandType = 13
	CmdDFSFileOp        CommandType = 14
	CmdDFSSetMaxBuckets CommandType = 15
	CmdDFSMarkLost      CommandType = 16
)

const (
	DFSConfigureV1     uint8 = 1
	DFSTouchV1         uint8 = 1
	DFSEvictV1         uint8 = 1
	DFSFileOpV1        uint8 = 1
	DFSSetMaxBucketsV1 uint8 = 1
	DFSMarkLostV1      uint8 = 1
)

// DFSSettings is dfsalloc.Config on the wire (and in the snapshot): every
// master must apply with the same one, so it is replicated rather than read
// from each node's environment.
type DFSSettings struct {
	Allocator             string  `msgpack:"alloc"`
	Alignment             int64   `msgpack:"align"`
	ShardCount            int     `msgpack:"shards"`
	ShardCapacity         int64   `msgpack:"shard_cap"`
	DeferredFreeSeconds   int64   `msgpack:"defer_s"`
	BucketCapacity        int64   `msgpack:"bucket_cap"`
	MaxBucketCount        int     `msgpack:"max_buckets"`
	EvictionEnabled       bool    `msgpack:"evict"`
	HighWatermark         float64 `msgpack:"high"`
	LowWatermark          float64 `msgpack:"low"`
	EvictionCheckInterval int64   `msgpack:"check_s"`
}

// SettingsOf converts a dfsalloc.Config for a DFSConfigure command.
func SettingsOf(c dfsalloc.Config) DFSSettings {
	return DFSSettings{
		Allocator: c.Allocator, Alignment: c.Alignment, ShardCount: c.ShardCount, ShardCapacity: c.ShardCapacity,
		DeferredFreeSeconds: c.DeferredFreeSeconds, BucketCapacity: c.BucketCapacity, MaxBucketCount: c.MaxBucketCount,
		EvictionEnabled: c.EvictionEnabled, HighWatermark: c.HighWatermark, LowWatermark: c.LowWatermark,
		EvictionCheckInterval: c.EvictionCheckInterval,
	}
}

// Config converts back.
func (s DFSSettings) Config() dfsalloc.Config {
	return dfsalloc.Config{
		Allocator: s.Allocator, Alignment: s.Alignment, ShardCount: s.ShardCount, ShardCapacity: s.ShardCapacity,
		DeferredFreeSeconds: s.DeferredFreeSeconds, BucketCapacity: s.BucketCapacity, MaxBucketCount: s.MaxBucketCount,
		EvictionEnabled: s.EvictionEnabled, HighWatermark: s.HighWatermark, LowWatermark: s.LowWatermark,
		EvictionCheckInterval: s.EvictionCheckInterval,
	}
}

// DFSConfigure sets the cluster's DFS allocator configuration. The first
// one creates the allocator; an identical one is a no-op; one that differs
// only in eviction settings, deferral or the initial bucket maximum is
// taken over; one that changes the allocator, alignment, unit capacity or
// shard count is refused while any bucket or shard exists.
type DFSConfigure struct {
	V        uint8       `msgpack:"v"`
	Settings DFSSettings `msgpack:"settings"`
	Now      int64       `msgpack:"now"`
}

// DFSTouch records reads of DFS entries for LRU eviction; the leader
// coalesces them (at most one per entry per check interval).
type DFSTouch struct {
	V    uint8               `msgpack:"v"`
	Refs []dfsalloc.EntryRef `msgpack:"refs"`
	Now  int64               `msgpack:"now"`
}

// DFSEvict carries the leader's eviction plan (made with its read leases);
// Apply re-validates it against the state.
type DFSEvict struct {
	V    uint8                 `msgpack:"v"`
	Plan dfsalloc.EvictionPlan `msgpack:"plan"`
	Now  int64                 `msgpack:"now"`
}

// DFSFileOp is the outcome of a file side effect the leader performed.
type DFSFileOp struct {
	V    uint8               `msgpack:"v"`
	Kind dfsalloc.FileOpKind `msgpack:"kind"`
	Unit uint64              `msgpack:"unit"`
	OK   bool                `msgpack:"ok"`
	Now  int64               `msgpack:"now"`
}

// DFSSetMaxBuckets changes the bucket allocator's maximum at run time.
type DFSSetMaxBuckets struct {
	V   uint8 `msgpack:"v"`
	Max int   `msgpack:"max"`
	Now int64 `msgpack:"now"`
}

// DFSMarkLost says a file the state needs is missing: its entries are
// lost and their replicas dropped.
type DFSMarkLost struct {
	V    uint8  `msgpack:"v"`
	Unit uint64 `msgpack:"unit"`
	Now  int64  `msgpack:"now"`
}

// DFSResult answers every DFS command. Dropped lists the entries whose
// replicas were dropped (DFSEvict, DFSMarkLost), sorted by unit and offset;
// ObjectsLost counts the objects left with no replica that were removed.
type DFSResult struct {
	Err         *api.Error
	Dropped     []dfsalloc.EntryRef
	ObjectsLost int
}
