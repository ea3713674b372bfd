package holder

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by GCOptionsFromEnv (docs/DESIGN.md §6).
const (
	EnvGCEnable          = "MOONCAKE_OFFLOAD_BUCKET_GC_ENABLE"
	EnvGCIntervalSeconds = "MOONCAKE_OFFLOAD_BUCKET_GC_INTERVAL_SECONDS"
	EnvGCDeletedRatio    = "MOONCAKE_OFFLOAD_BUCKET_GC_DELETED_RATIO"
	EnvGCHighWatermark   = "MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO"
	EnvGCLowWatermark    = "MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO"
)

// Defaults of the GC policy.
const (
	DefaultGCInterval      = 10 * time.Second
	DefaultGCDeletedRatio  = 0.25
	DefaultGCHighWatermark = 0.90
	DefaultGCLowWatermark  = 0.80
	// DefaultGCDrainTimeout bounds how long a round waits for readers of
	// its sources before leaving the unlink to a later round.
	DefaultGCDrainTimeout = 30 * time.Second
	// maxGCInterval keeps a typo from silently disabling the periodic wake.
	maxGCInterval = 24 * time.Hour
)

// GCOptions configures the store's bucket GC worker.
type GCOptions struct {
	// Enabled starts the worker; false leaves dead bytes on disk.
	Enabled bool
	// Interval is the periodic wake; new tombstones also wake the worker.
	Interval time.Duration
	// DeletedRatio is the dead-byte ratio at which a bucket is collected
	// in normal operation, in (0, 1].
	DeletedRatio float64
	// HighWatermark and LowWatermark are usage ratios (bytes on disk ÷
	// Capacity): at or above high the ratio is bypassed and space is
	// reclaimed (dead bytes first, then evicting live buckets) until usage
	// is at or below low. Both in (0, 1], low < high.
	HighWatermark, LowWatermark float64
	// Capacity is the bytes this segment may use; 0 turns the watermarks off.
	Capacity int64
	// DrainTimeout bounds the wait for readers of a round's sources; zero
	// means DefaultGCDrainTimeout.
	DrainTimeout time.Duration
	// AgeAware (the default) chooses victims by cost-benefit (dead share ×
	// age) instead of greedily by dead share, and lets young buckets wait
	// until they are at twice the ratio or as good a victim as a bucket of
	// median age at the ratio; docs/SCALING.md ("The write path") has what
	// it measured.
	AgeAware bool
}

// DefaultGCOptions is the policy of docs/DESIGN.md §6 with capacity unknown.
func DefaultGCOptions() GCOptions {
	return GCOptions{Enabled: true, Interval: DefaultGCInterval, DeletedRatio: DefaultGCDeletedRatio,
		HighWatermark: DefaultGCHighWatermark, LowWatermark: DefaultGCLowWatermark, DrainTimeout: DefaultGCDrainTimeout,
		AgeAware: true}
}

// GCOptionsFromEnv is DefaultGCOptions overridden by the MOONCAKE_OFFLOAD_*
// variables. A value that is set but does not parse, or is out of range,
// is an error naming the variable: a typo must not silently become the
// default.
func GCOptionsFromEnv() (GCOptions, error) { return gcOptionsFromLookup(os.LookupEnv) }

func gcOptionsFromLookup(lookup func(string) (string, bool)) (GCOptions, error) {
	o := DefaultGCOptions()
	if v, ok := lookup(EnvGCEnable); ok && v != "" {
		b, err := parseBoolSetting(v)
		if err != nil {
			return o, fmt.Errorf("%w: %s=%q is not a boolean", ErrBadOptions, EnvGCEnable, v)
		}
		o.Enabled = b
	}
	if v, ok := lookup(EnvGCIntervalSeconds); ok && v != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f > maxGCInterval.Seconds() {
			return o, fmt.Errorf("%w: %s=%q is not a number of seconds in (0, %d]", ErrBadOptions, EnvGCIntervalSeconds, v, int(maxGCInterval.Seconds()))
		}
		o.Interval = time.Duration(f * float64(time.Second))
	}
	for _, r := range []struct {
		name string
		dst  *float64
	}{{EnvGCDeletedRatio, &o.DeletedRatio}, {EnvGCHighWatermark, &o.HighWatermark}, {EnvGCLowWatermark, &o.LowWatermark}} {
		if v, ok := lookup(r.name); ok && v != "" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return o, fmt.Errorf("%w: %s=%q is not a number", ErrBadOptions, r.name, v)
			}
			*r.dst = f
		}
	}
	return o, o.Validate()
}

func parseBoolSetting(v string) (bool, error) {
	switch strings.TrimSpace(strings.ToLower(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", v)
}

// Validate refuses settings the worker cannot honour, naming the setting.
func (o GCOptions) Validate() error {
	ratio := func(name, env string, v float64) error {
		if math.IsNaN(v) || v <= 0 || v > 1 {
			return fmt.Errorf("%w: GC %s %v is outside (0, 1] (%s)", ErrBadOptions, name, v, env)
		}
		return nil
	}
	if err := ratio("deleted ratio", EnvGCDeletedRatio, o.DeletedRatio); err != nil {
		return err
	}
	if err := ratio("high watermark", EnvGCHighWatermark, o.HighWatermark); err != nil {
		return err
	}
	if err := ratio("low watermark", EnvGCLowWatermark, o.LowWatermark); err != nil {
		return err
	}
	if o.LowWatermark >= o.HighWatermark {
		return fmt.Errorf("%w: GC low watermark %v must be below the high watermark %v (%s, %s)",
			ErrBadOptions, o.LowWatermark, o.HighWatermark, EnvGCLowWatermark, EnvGCHighWatermark)
	}
	if o.Interval <= 0 || o.Interval > maxGCInterval {
		return fmt.Errorf("%w: GC interval %v is outside (0, %v] (%s)", ErrBadOptions, o.Interval, maxGCInterval, EnvGCIntervalSeconds)
	}
	if o.Capacity < 0 {
		return fmt.Errorf("%w: capacity %d is negative", ErrBadOptions, o.Capacity)
	}
	if o.DrainTimeout < 0 {
		return fmt.Errorf("%w: GC drain timeout %v is negative", ErrBadOptions, o.DrainTimeout)
	}
	return nil
}
