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
		{"unknown allocator", bucket(func(c *Config) { c.Allocator = "hf3fs" }), SettingAllocator},
		{"bucket capacity zero", bucket(func(c *Config) { c.BucketCapacity = 0 }), SettingBucketCapacity},
		{"bucket capacity negative", bucket(func(c *Config) { c.BucketCapacity = -4096 }), SettingBucketCapacity},
		{"bucket capacity unaligned", bucket(func(c *Config) { c.BucketCapacity = 1<<30 + 1 }), SettingBucketCapacity},
		{"bucket capacity beyond int64 offsets", bucket(func(c *Config) { c.BucketCapacity = 1<<63 - 1 }), SettingBucketCapacity},
		{"alignment not a power of two", bucket(func(c *Config) { c.Alignment = 3000 }), SettingAlignment},
		{"alignment zero", bucket(func(c *Config) { c.Alignment = 0 }), SettingAlignment},
		{"alignment does not divide bucket capacity", bucket(func(c *Config) { c.Alignment = 8192; c.BucketCapacity = 3 * 4096 }), SettingBucketCapacity},
		{"alignment does not divide shard capacity", shard(func(c *Config) { c.Alignment = 1 << 20; c.ShardCapacity = 5 << 19 }), SettingShardCapacity},
		{"max bucket count zero", bucket(func(c *Config) { c.MaxBucketCount = 0 }), SettingMaxBucketCount},
		{"shard count zero", shard(func(c *Config) { c.ShardCount = 0 }), SettingShardCount},
		{"shard capacity zero", shard(func(c *Config) { c.ShardCapacity = 0 }), SettingShardCapacity},
		{"deferred free negative", shard(func(c *Config) { c.DeferredFreeSeconds = -1 }), SettingDeferredFree},
		{"low equals high", bucket(func(c *Config) { c.LowWatermark = 0.9 }), SettingLowWatermark},
		{"low above high", shard(func(c *Config) { c.LowWatermark = 0.95 }), SettingLowWatermark},
		{"high above one", bucket(func(c *Config) { c.HighWatermark = 1.5 }), SettingHighWatermark},
		{"low zero", bucket(func(c *Config) { c.LowWatermark = 0 }), SettingLowWatermark},
		{"check interval zero", bucket(func(c *Config) { c.EvictionCheckInterval = 0 }), SettingCheckInterval},
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

func TestCompareSharedNamesTheMismatch(t *testing.T) {
	master := bucketConfig(1<<30, 64)
	client := master
	client.MaxBucketCount = 3 // master-only setting: no effect
	client.EvictionEnabled = false
	must(t, client.CompareShared(master))
	client.BucketCapacity = 1 << 29
	err := client.CompareShared(master)
	if !errors.Is(err, api.ErrDFSMismatch) || !strings.Contains(err.Error(), SettingBucketCapacity) {
		t.Fatalf("CompareShared = %v, want DFS_CONFIG_MISMATCH naming %s", err, SettingBucketCapacity)
	}
	shardMaster := shardConfig(64, 4<<30)
	shardClient := shardMaster
	shardClient.ShardCount = 32
	if err := shardClient.CompareShared(shardMaster); !errors.Is(err, api.ErrDFSMismatch) || !strings.Contains(err.Error(), SettingShardCount) {
		t.Fatalf("CompareShared = %v, want mismatch naming %s", err, SettingShardCount)
	}
}
