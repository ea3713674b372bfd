package dfsio

import (
	"errors"
	"strings"
	"testing"

	"sexton/fsm/dfsalloc"
)

func TestAllocConfigFromEnvReadsEveryVariable(t *testing.T) {
	env := map[string]string{
		"MOONCAKE_DFS_ALLOCATOR":               "bucket",
		"MOONCAKE_DFS_ALIGNMENT":               "8192",
		"MOONCAKE_DFS_SHARD_COUNT":             "128",
		"MOONCAKE_DFS_SHARD_CAPACITY":          "8589934592",
		"MOONCAKE_DFS_DEFERRED_FREE_SECONDS":   "45",
		"MOONCAKE_DFS_BUCKET_CAPACITY":         "268435456",
		"MOONCAKE_DFS_MAX_BUCKET_COUNT":        "16",
		"MOONCAKE_DFS_EVICTION_ENABLED":        "false",
		"MOONCAKE_DFS_EVICTION_HIGH_WATERMARK": "0.8",
		"MOONCAKE_DFS_EVICTION_LOW_WATERMARK":  " 0.5 ",
		"MOONCAKE_DFS_EVICTION_CHECK_INTERVAL": "7",
	}
	c, err := AllocConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := dfsalloc.Config{
		Allocator: dfsalloc.KindBucket, Alignment: 8192, ShardCount: 128, ShardCapacity: 8 << 30, DeferredFreeSeconds: 45,
		BucketCapacity: 256 << 20, MaxBucketCount: 16, EvictionEnabled: false,
		HighWatermark: 0.8, LowWatermark: 0.5, EvictionCheckInterval: 7,
	}
	if c != want {
		t.Fatalf("AllocConfigFromEnv = %+v, want %+v", c, want)
	}
	// Environment gives back what was read.
	back := map[string]string{}
	for _, kv := range AllocEnvironment(c) {
		k, v, _ := strings.Cut(kv, "=")
		back[k] = v
	}
	again, err := AllocConfigFromEnv(func(k string) string { return back[k] })
	if err != nil {
		t.Fatal(err)
	}
	if again != c {
		t.Fatalf("Environment round trip: %+v, want %+v", again, c)
	}
}

func TestAllocConfigFromEnvEmptyIsDefault(t *testing.T) {
	c, err := AllocConfigFromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c != dfsalloc.DefaultConfig() {
		t.Fatalf("got %+v, want defaults", c)
	}
}

func TestAllocConfigFromEnvRefusesMalformedValues(t *testing.T) {
	for name, val := range map[string]string{
		"MOONCAKE_DFS_ALIGNMENT":               "4k",
		"MOONCAKE_DFS_SHARD_COUNT":             "many",
		"MOONCAKE_DFS_BUCKET_CAPACITY":         "1GiB",
		"MOONCAKE_DFS_EVICTION_ENABLED":        "yes please",
		"MOONCAKE_DFS_EVICTION_LOW_WATERMARK":  "low",
		"MOONCAKE_DFS_ALLOCATOR":               "Bucket",
		"MOONCAKE_DFS_MAX_BUCKET_COUNT":        "99999999999",
		"MOONCAKE_DFS_EVICTION_HIGH_WATERMARK": "0.6", // below the default low watermark
	} {
		_, err := AllocConfigFromEnv(func(k string) string {
			if k == name {
				return val
			}
			return ""
		})
		if !errors.Is(err, dfsalloc.ErrInvalidConfig) || !strings.Contains(err.Error(), strings.TrimSuffix(name, "_HIGH_WATERMARK")) {
			t.Errorf("%s=%q: err %v, want dfsalloc.ErrInvalidConfig naming it", name, val, err)
		}
	}
}
