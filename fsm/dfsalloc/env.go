package dfsalloc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Environment variable names, exactly as in the ancestor and issue 6.
const (
	envAllocator      = "MOONCAKE_DFS_ALLOCATOR"
	envAlignment      = "MOONCAKE_DFS_ALIGNMENT"
	envShardCount     = "MOONCAKE_DFS_SHARD_COUNT"
	envShardCapacity  = "MOONCAKE_DFS_SHARD_CAPACITY"
	envDeferredFree   = "MOONCAKE_DFS_DEFERRED_FREE_SECONDS"
	envBucketCapacity = "MOONCAKE_DFS_BUCKET_CAPACITY"
	envMaxBucketCount = "MOONCAKE_DFS_MAX_BUCKET_COUNT"
	envEvictEnabled   = "MOONCAKE_DFS_EVICTION_ENABLED"
	envHighWatermark  = "MOONCAKE_DFS_EVICTION_HIGH_WATERMARK"
	envLowWatermark   = "MOONCAKE_DFS_EVICTION_LOW_WATERMARK"
	envCheckInterval  = "MOONCAKE_DFS_EVICTION_CHECK_INTERVAL"
)

// ConfigFromEnv reads the MOONCAKE_DFS_* settings through getenv (os.Getenv
// in production, a map in tests), starting from DefaultConfig for every
// variable that is unset or empty, and validates the result. A value that
// does not parse is refused even if its allocator is not selected: a typo
// should not wait for the day someone switches allocators.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	get := func(name string) (string, bool) {
		v := strings.TrimSpace(getenv(name))
		return v, v != ""
	}
	var firstErr error
	setInt := func(name string, dst *int64) {
		if v, ok := get(name); ok && firstErr == nil {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				firstErr = configErr(name, "%q is not an integer", v)
				return
			}
			*dst = n
		}
	}
	setCount := func(name string, dst *int) {
		n := int64(*dst)
		setInt(name, &n)
		if n > int64(^uint32(0)>>1) || n < -int64(^uint32(0)>>1) {
			if firstErr == nil {
				firstErr = configErr(name, "%d is out of range", n)
			}
			return
		}
		*dst = int(n)
	}
	setFloat := func(name string, dst *float64) {
		if v, ok := get(name); ok && firstErr == nil {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				firstErr = configErr(name, "%q is not a number", v)
				return
			}
			*dst = f
		}
	}
	if v, ok := get(envAllocator); ok {
		c.Allocator = v
	}
	setInt(envAlignment, &c.Alignment)
	setCount(envShardCount, &c.ShardCount)
	setInt(envShardCapacity, &c.ShardCapacity)
	setInt(envDeferredFree, &c.DeferredFreeSeconds)
	setInt(envBucketCapacity, &c.BucketCapacity)
	setCount(envMaxBucketCount, &c.MaxBucketCount)
	if v, ok := get(envEvictEnabled); ok && firstErr == nil {
		b, err := strconv.ParseBool(v)
		if err != nil {
			firstErr = configErr(envEvictEnabled, "%q is not a boolean", v)
		}
		c.EvictionEnabled = b
	}
	setFloat(envHighWatermark, &c.HighWatermark)
	setFloat(envLowWatermark, &c.LowWatermark)
	setInt(envCheckInterval, &c.EvictionCheckInterval)
	if firstErr != nil {
		return Config{}, firstErr
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Environment returns c as MOONCAKE_DFS_* assignments, sorted by name, so
// the master can publish its settings and an operator can read them back.
func (c Config) Environment() []string {
	kv := map[string]string{
		envAllocator:      c.Allocator,
		envAlignment:      strconv.FormatInt(c.Alignment, 10),
		envShardCount:     strconv.Itoa(c.ShardCount),
		envShardCapacity:  strconv.FormatInt(c.ShardCapacity, 10),
		envDeferredFree:   strconv.FormatInt(c.DeferredFreeSeconds, 10),
		envBucketCapacity: strconv.FormatInt(c.BucketCapacity, 10),
		envMaxBucketCount: strconv.Itoa(c.MaxBucketCount),
		envEvictEnabled:   strconv.FormatBool(c.EvictionEnabled),
		envHighWatermark:  strconv.FormatFloat(c.HighWatermark, 'g', -1, 64),
		envLowWatermark:   strconv.FormatFloat(c.LowWatermark, 'g', -1, 64),
		envCheckInterval:  strconv.FormatInt(c.EvictionCheckInterval, 10),
	}
	out := make([]string, 0, len(kv))
	for k, v := range kv {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	slices.Sort(out)
	return out
}
