package dfsalloc

import (
	"fmt"
	"math"

	"sexton/api"
)

// Allocator names, as in MOONCAKE_DFS_ALLOCATOR and api.DFSDescriptor.Allocator.
const (
	KindShard  = "shard"
	KindBucket = "bucket"
)

// Bounds on settings. They keep every derived quantity (file names, counts,
// nanosecond deadlines) far from overflow and every loop bounded.
const (
	MaxAlignment           = 1 << 30
	MaxShardCount          = 1 << 16
	MaxBucketCountLimit    = 1 << 20
	MaxDeferredFreeSeconds = 7 * 24 * 3600
	MaxCheckIntervalSecs   = 24 * 3600
)

// Config is the DFS allocator's configuration. Allocator, Alignment and the
// active allocator's capacity must be identical on every master and client;
// they are recorded in the snapshot and a restore under different values is
// refused.
type Config struct {
	Allocator string // KindShard or KindBucket
	Alignment int64  // power of two, divides the unit capacity

	// shard allocator
	ShardCount          int
	ShardCapacity       int64
	DeferredFreeSeconds int64 // also the grace before an evicted bucket's file is deleted

	// bucket allocator
	BucketCapacity int64
	MaxBucketCount int // initial maximum; changed at run time by SetMaxBuckets

	// eviction
	EvictionEnabled       bool
	HighWatermark         float64
	LowWatermark          float64
	EvictionCheckInterval int64 // seconds; read by the leader's eviction loop only
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Allocator:             KindShard,
		Alignment:             4096,
		ShardCount:            64,
		ShardCapacity:         4 << 30,
		DeferredFreeSeconds:   30,
		BucketCapacity:        1 << 30,
		MaxBucketCount:        64,
		EvictionEnabled:       true,
		HighWatermark:         0.9,
		LowWatermark:          0.7,
		EvictionCheckInterval: 5,
	}
}

func configErr(setting, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, setting, fmt.Sprintf(format, args...))
}

// Validate checks every setting the selected allocator uses and names the
// first bad one. Settings of the other allocator have no effect and are not
// checked (as in the ancestor).
func (c Config) Validate() error {
	if c.Allocator != KindShard && c.Allocator != KindBucket {
		return configErr(SettingAllocator, "%q is neither %q nor %q", c.Allocator, KindShard, KindBucket)
	}
	if c.Alignment <= 0 || c.Alignment > MaxAlignment || c.Alignment&(c.Alignment-1) != 0 {
		return configErr(SettingAlignment, "%d is not a power of two in [1, %d]", c.Alignment, MaxAlignment)
	}
	if c.Allocator == KindShard {
		if c.ShardCount <= 0 || c.ShardCount > MaxShardCount {
			return configErr(SettingShardCount, "%d is not in [1, %d]", c.ShardCount, MaxShardCount)
		}
		if err := validCapacity(SettingShardCapacity, c.ShardCapacity, c.Alignment); err != nil {
			return err
		}
		if c.DeferredFreeSeconds < 0 || c.DeferredFreeSeconds > MaxDeferredFreeSeconds {
			return configErr(SettingDeferredFree, "%d is not in [0, %d]", c.DeferredFreeSeconds, MaxDeferredFreeSeconds)
		}
	} else {
		if err := validCapacity(SettingBucketCapacity, c.BucketCapacity, c.Alignment); err != nil {
			return err
		}
		if c.MaxBucketCount <= 0 || c.MaxBucketCount > MaxBucketCountLimit {
			return configErr(SettingMaxBucketCount, "%d is not in [1, %d]", c.MaxBucketCount, MaxBucketCountLimit)
		}
		if c.DeferredFreeSeconds < 0 || c.DeferredFreeSeconds > MaxDeferredFreeSeconds {
			return configErr(SettingDeferredFree, "%d is not in [0, %d]", c.DeferredFreeSeconds, MaxDeferredFreeSeconds)
		}
	}
	if !inUnit(c.HighWatermark) {
		return configErr(SettingHighWatermark, "%v is not in (0, 1]", c.HighWatermark)
	}
	if !inUnit(c.LowWatermark) {
		return configErr(SettingLowWatermark, "%v is not in (0, 1]", c.LowWatermark)
	}
	if c.LowWatermark >= c.HighWatermark {
		return configErr(SettingLowWatermark, "%v is not below %s %v", c.LowWatermark, SettingHighWatermark, c.HighWatermark)
	}
	if c.EvictionCheckInterval <= 0 || c.EvictionCheckInterval > MaxCheckIntervalSecs {
		return configErr(SettingCheckInterval, "%d is not in [1, %d]", c.EvictionCheckInterval, MaxCheckIntervalSecs)
	}
	return nil
}

// validCapacity: nonzero, a multiple of the alignment, and small enough that
// offset+size of any entry fits a signed 64-bit file offset.
func validCapacity(setting string, capacity, alignment int64) error {
	switch {
	case capacity <= 0:
		return configErr(setting, "%d is not positive", capacity)
	case capacity > math.MaxInt64-alignment:
		return configErr(setting, "%d does not fit a signed 64-bit file offset", capacity)
	case capacity%alignment != 0:
		return configErr(setting, "%d is not a multiple of %s %d", capacity, SettingAlignment, alignment)
	}
	return nil
}

func inUnit(f float64) bool { return f > 0 && f <= 1 && !math.IsNaN(f) }

// UnitCapacity is the size of one file of the selected allocator.
func (c Config) UnitCapacity() int64 {
	if c.Allocator == KindBucket {
		return c.BucketCapacity
	}
	return c.ShardCapacity
}

// deferNanos is the deferral in nanoseconds (bounded by Validate).
func (c Config) deferNanos() int64 { return c.DeferredFreeSeconds * 1e9 }

// CompareShared returns nil if a client configured with c may use the DFS
// space of a master configured with master: same allocator, alignment and
// unit capacity (and shard count for the shard allocator, which decides the
// file names). Otherwise it names the first mismatch. The DFS root and the
// adapter are compared by the caller, who owns them.
func (c Config) CompareShared(master Config) error {
	mismatch := func(setting string, mine, theirs any) error {
		return fmt.Errorf("%w: %s is %v here but %v on the master", api.ErrDFSMismatch, setting, mine, theirs)
	}
	switch {
	case c.Allocator != master.Allocator:
		return mismatch(SettingAllocator, c.Allocator, master.Allocator)
	case c.Alignment != master.Alignment:
		return mismatch(SettingAlignment, c.Alignment, master.Alignment)
	case c.Allocator == KindShard && c.ShardCapacity != master.ShardCapacity:
		return mismatch(SettingShardCapacity, c.ShardCapacity, master.ShardCapacity)
	case c.Allocator == KindShard && c.ShardCount != master.ShardCount:
		return mismatch(SettingShardCount, c.ShardCount, master.ShardCount)
	case c.Allocator == KindBucket && c.BucketCapacity != master.BucketCapacity:
		return mismatch(SettingBucketCapacity, c.BucketCapacity, master.BucketCapacity)
	}
	return nil
}
