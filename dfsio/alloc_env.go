package dfsio

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sexton/fsm/dfsalloc"
)

// AllocConfigFromEnv reads the allocator's MOONCAKE_DFS_* settings through
// getenv (os.Getenv in production, a map in tests), starting from
// dfsalloc.DefaultConfig for every variable that is unset or empty, and
// validates the result. A value that does not parse is refused even if
// its allocator is not selected: a typo should not wait for the day
// someone switches allocators.
func AllocConfigFromEnv(getenv func(string) string) (dfsalloc.Config, error) {
	c := dfsalloc.DefaultConfig()
	get := func(name string) (string, bool) {
		v := strings.TrimSpace(getenv(name))
		return v, v != ""
	}
	var firstErr error
	fail := func(name, format string, args ...any) {
		if firstErr == nil {
			firstErr = fmt.Errorf("%w: %s: %s", dfsalloc.ErrInvalidConfig, name, fmt.Sprintf(format, args...))
		}
	}
	setInt := func(name string, dst *int64) {
		if v, ok := get(name); ok && firstErr == nil {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				fail(name, "%q is not an integer", v)
				return
			}
			*dst = n
		}
	}
	setCount := func(name string, dst *int) {
		n := int64(*dst)
		setInt(name, &n)
		if n > int64(^uint32(0)>>1) || n < -int64(^uint32(0)>>1) {
			fail(name, "%d is out of range", n)
			return
		}
		*dst = int(n)
	}
	setFloat := func(name string, dst *float64) {
		if v, ok := get(name); ok && firstErr == nil {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				fail(name, "%q is not a number", v)
				return
			}
			*dst = f
		}
	}
	if v, ok := get(dfsalloc.SettingAllocator); ok {
		c.Allocator = v
	}
	setInt(dfsalloc.SettingAlignment, &c.Alignment)
	setCount(dfsalloc.SettingShardCount, &c.ShardCount)
	setInt(dfsalloc.SettingShardCapacity, &c.ShardCapacity)
	setInt(dfsalloc.SettingDeferredFree, &c.DeferredFreeSeconds)
	setInt(dfsalloc.SettingBucketCapacity, &c.BucketCapacity)
	setCount(dfsalloc.SettingMaxBucketCount, &c.MaxBucketCount)
	if v, ok := get(dfsalloc.SettingEvictEnabled); ok && firstErr == nil {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail(dfsalloc.SettingEvictEnabled, "%q is not a boolean", v)
		}
		c.EvictionEnabled = b
	}
	setFloat(dfsalloc.SettingHighWatermark, &c.HighWatermark)
	setFloat(dfsalloc.SettingLowWatermark, &c.LowWatermark)
	setInt(dfsalloc.SettingCheckInterval, &c.EvictionCheckInterval)
	if firstErr != nil {
		return dfsalloc.Config{}, firstErr
	}
	if err := c.Validate(); err != nil {
		return dfsalloc.Config{}, err
	}
	return c, nil
}

// AllocEnvironment returns c as MOONCAKE_DFS_* assignments, sorted by
// name, so the master can publish its settings and an operator or a
// client can read them back (AllocConfigFromEnv).
func AllocEnvironment(c dfsalloc.Config) []string {
	kv := map[string]string{
		dfsalloc.SettingAllocator:      c.Allocator,
		dfsalloc.SettingAlignment:      strconv.FormatInt(c.Alignment, 10),
		dfsalloc.SettingShardCount:     strconv.Itoa(c.ShardCount),
		dfsalloc.SettingShardCapacity:  strconv.FormatInt(c.ShardCapacity, 10),
		dfsalloc.SettingDeferredFree:   strconv.FormatInt(c.DeferredFreeSeconds, 10),
		dfsalloc.SettingBucketCapacity: strconv.FormatInt(c.BucketCapacity, 10),
		dfsalloc.SettingMaxBucketCount: strconv.Itoa(c.MaxBucketCount),
		dfsalloc.SettingEvictEnabled:   strconv.FormatBool(c.EvictionEnabled),
		dfsalloc.SettingHighWatermark:  strconv.FormatFloat(c.HighWatermark, 'g', -1, 64),
		dfsalloc.SettingLowWatermark:   strconv.FormatFloat(c.LowWatermark, 'g', -1, 64),
		dfsalloc.SettingCheckInterval:  strconv.FormatInt(c.EvictionCheckInterval, 10),
	}
	out := make([]string, 0, len(kv))
	for k, v := range kv {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	slices.Sort(out)
	return out
}
