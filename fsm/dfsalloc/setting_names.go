package dfsalloc

// The settings' names, which are also the MOONCAKE_DFS_* environment
// variables a process reads them from (package dfsio reads them): an
// invalid or mismatched setting is named this way, so an operator finds
// the variable to fix. This package reads no environment.
const (
	SettingAllocator      = "MOONCAKE_DFS_ALLOCATOR"
	SettingAlignment      = "MOONCAKE_DFS_ALIGNMENT"
	SettingShardCount     = "MOONCAKE_DFS_SHARD_COUNT"
	SettingShardCapacity  = "MOONCAKE_DFS_SHARD_CAPACITY"
	SettingDeferredFree   = "MOONCAKE_DFS_DEFERRED_FREE_SECONDS"
	SettingBucketCapacity = "MOONCAKE_DFS_BUCKET_CAPACITY"
	SettingMaxBucketCount = "MOONCAKE_DFS_MAX_BUCKET_COUNT"
	SettingEvictEnabled   = "MOONCAKE_DFS_EVICTION_ENABLED"
	SettingHighWatermark  = "MOONCAKE_DFS_EVICTION_HIGH_WATERMARK"
	SettingLowWatermark   = "MOONCAKE_DFS_EVICTION_LOW_WATERMARK"
	SettingCheckInterval  = "MOONCAKE_DFS_EVICTION_CHECK_INTERVAL"
)
