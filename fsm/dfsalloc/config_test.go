package dfsalloc

import (
	"errors"
	"strings"
	"testing"

	"sexton/api"
)

func TestDefaultConfigIsValidForBothAllocators(t *testing.T) {
	c := DefaultConfig()
	must(t, c.Validate())
	c.Allocator = KindBucket
	must(t, c.Validate())
	if c.Alignment != 4096 || c.ShardCount != 64 || c.ShardCapacity != 4<<30 || c.DeferredFreeSeconds != 30 ||
		c.BucketCapacity != 1<<30 || c.MaxBucketCount != 64 || !c.EvictionEnabled || c.HighWatermark != 0.9 || c.LowWatermark != 0.7 {
		t.Fatalf("defaults %+v differ from the documented ones", c)
	}
}

func TestValidateRefusesBadSettingsNamingThem(t *testing.T) {
	bucket := func(f func(*Config)) Config { c := bucketConfig(1<<30, 64); f(&c); return c }
	shard := func(f func(*Config)) Config { c := shardConfig(64, 4<<30); f(&c); return c }
	cases := []struct {
		name    string
		cfg     Config
		setting string
	}{
		{"unknown allocator", bucket(func(c *Config) { c.Allocator = "hf3fs" }), envAllocator},
		{"bucket capacity zero", bucket(func(c *Config) { c.BucketCapacity = 0 }), envBucketCapacity},
		{"bucket capacity negative", bucket(func(c *Config) { c.BucketCapacity = -4096 }), envBucketCapacity},
		{"bucket capacity unaligned", bucket(func(c *Config) { c.BucketCapacity = 1<<30 + 1 }), envBucketCapacity},
		{"bucket capacity beyond int64 offsets", bucket(func(c *Config) { c.BucketCapacity = 1<<63 - 1 }), envBucketCapacity},
		{"alignment not a power of two", bucket(func(c *Config) { c.Alignment = 3000 }), envAlignment},
		{"alignment zero", bucket(func(c *Config) { c.Alignment = 0 }), envAlignment},
		{"alignment does not divide bucket capacity", bucket(func(c *Config) { c.Alignment = 8192; c.BucketCapacity = 3 * 4096 }), envBucketCapacity},
		{"alignment does not divide shard capacity", shard(func(c *Config) { c.Alignment = 1 << 20; c.ShardCapacity = 5 << 19 }), envShardCapacity},
		{"max bucket count zero", bucket(func(c *Config) { c.MaxBucketCount = 0 }), envMaxBucketCount},
		{"shard count zero", shard(func(c *Config) { c.ShardCount = 0 }), envShardCount},
		{"shard capacity zero", shard(func(c *Config) { c.ShardCapacity = 0 }), envShardCapacity},
		{"deferred free negative", shard(func(c *Config) { c.DeferredFreeSeconds = -1 }), envDeferredFree},
		{"low equals high", bucket(func(c *Config) { c.LowWatermark = 0.9 }), envLowWatermark},
		{"low above high", shard(func(c *Config) { c.LowWatermark = 0.95 }), envLowWatermark},
		{"high above one", bucket(func(c *Config) { c.HighWatermark = 1.5 }), envHighWatermark},
		{"low zero", bucket(func(c *Config) { c.LowWatermark = 0 }), envLowWatermark},
		{"check interval zero", bucket(func(c *Config) { c.EvictionCheckInterval = 0 }), envCheckInterval},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.setting) {
				t.Fatalf("error %q does not name %s", err, tc.setting)
			}
			if _, err := New(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New accepted the config: %v", err)
			}
		})
	}
}

func TestValidateIgnoresTheOtherAllocatorsSettings(t *testing.T) {
	c := bucketConfig(1<<30, 64)
	c.ShardCount, c.ShardCapacity = 0, 1
	must(t, c.Validate())
	c = shardConfig(64, 4<<30)
	c.BucketCapacity, c.MaxBucketCount = 0, 0
	must(t, c.Validate())
}

func TestConfigFromEnvReadsEveryVariable(t *testing.T) {
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
	c, err := ConfigFromEnv(func(k string) string { return env[k] })
	must(t, err)
	want := Config{
		Allocator: KindBucket, Alignment: 8192, ShardCount: 128, ShardCapacity: 8 << 30, DeferredFreeSeconds: 45,
		BucketCapacity: 256 << 20, MaxBucketCount: 16, EvictionEnabled: false,
		HighWatermark: 0.8, LowWatermark: 0.5, EvictionCheckInterval: 7,
	}
	if c != want {
		t.Fatalf("ConfigFromEnv = %+v, want %+v", c, want)
	}
	// Environment gives back what was read.
	back := map[string]string{}
	for _, kv := range c.Environment() {
		k, v, _ := strings.Cut(kv, "=")
		back[k] = v
	}
	again, err := ConfigFromEnv(func(k string) string { return back[k] })
	must(t, err)
	if again != c {
		t.Fatalf("Environment round trip: %+v, want %+v", again, c)
	}
}

func TestConfigFromEnvEmptyIsDefault(t *testing.T) {
	c, err := ConfigFromEnv(func(string) string { return "" })
	must(t, err)
	if c != DefaultConfig() {
		t.Fatalf("got %+v, want defaults", c)
	}
}

func TestConfigFromEnvRefusesMalformedValues(t *testing.T) {
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
		_, err := ConfigFromEnv(func(k string) string {
			if k == name {
				return val
			}
			return ""
		})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), strings.TrimSuffix(name, "_HIGH_WATERMARK")) {
			t.Errorf("%s=%q: err %v, want ErrInvalidConfig naming it", name, val, err)
		}
	}
}

func TestCompareSharedNamesTheMismatch(t *testing.T) {
	master := bucketConfig(1<<30, 64)
	client := master
	client.MaxBucketCount = 3 // master-only setting: no effect
	client.EvictionEnabled = false
	must(t, client.CompareShared(master))
	client.BucketCapacity = 1 << 29
	err := client.CompareShared(master)
	if !errors.Is(err, api.ErrDFSMismatch) || !strings.Contains(err.Error(), envBucketCapacity) {
		t.Fatalf("CompareShared = %v, want DFS_CONFIG_MISMATCH naming %s", err, envBucketCapacity)
	}
	shardMaster := shardConfig(64, 4<<30)
	shardClient := shardMaster
	shardClient.ShardCount = 32
	if err := shardClient.CompareShared(shardMaster); !errors.Is(err, api.ErrDFSMismatch) || !strings.Contains(err.Error(), envShardCount) {
		t.Fatalf("CompareShared = %v, want mismatch naming %s", err, envShardCount)
	}
}
