package holder

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"sexton/internal/fsys"
)

// Environment variables read by OptionsFromEnv.
const (
	EnvBucketSizeLimit = "MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES"
	EnvBucketKeysLimit = "MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT"
	EnvAdoptUnmarked   = "MC_STORE_ADOPT_UNMARKED_LOCAL_DISK"
)

// Defaults and hard bounds of the bucket limits.
const (
	DefaultBucketSizeLimit int64 = 256 << 20
	DefaultBucketKeysLimit       = 500
	// MaxBucketSizeLimit bounds a bucket (and so any one object) at 4 GiB.
	MaxBucketSizeLimit int64 = 4 << 30
	// MaxBucketKeysLimit keeps a full bucket's metadata far below
	// MaxMetaFileSize even with maximal keys and tenants.
	MaxBucketKeysLimit = 10000
)

// StoreOptions configures OpenStore. The zero value of a limit means its
// default.
type StoreOptions struct {
	// BucketSizeLimit bounds the data bytes of one bucket.
	BucketSizeLimit int64
	// BucketKeysLimit bounds the records (live or tombstoned) of one bucket.
	BucketKeysLimit int
	// AdoptUnmarked lets OpenStore write a fresh identity marker into a
	// non-empty directory that has none (MC_STORE_ADOPT_UNMARKED_LOCAL_DISK=1).
	AdoptUnmarked bool
	// ClusterID, when non-zero, is recorded in a new marker, and an existing
	// marker with a different non-zero cluster id is refused.
	ClusterID uint64
	// FS is the filesystem; nil means the real one.
	FS fsys.FS
	// Logger receives the open report and I/O failures; nil discards.
	Logger hclog.Logger
	// FloorRetention is how long a tombstone floor entry is kept
	// (DefaultFloorRetention when zero). It must exceed the longest grant
	// lifetime plus the clock skew; see floor.go.
	FloorRetention time.Duration
	// Now is the clock floor entries are stamped and expired with; nil
	// means time.Now.
	Now func() time.Time
	// MetadataReserve is the space kept for the writes that free space
	// (tombstones, floors, GC intents and metadata): puts are refused
	// NO_SPACE while less would be free, and .space_reserve is
	// preallocated to it and released when one of those writes meets
	// ENOSPC. 0 turns both off (the library default, so tests opt in);
	// the holder command defaults it to MetadataReserveFor.
	MetadataReserve int64
}

// OptionsFromEnv reads the bucket limits and the adoption switch from the
// environment. A value that is set but not a valid number (or boolean), or
// is out of range, is an error naming the variable: a typo must not silently
// become the default.
func OptionsFromEnv() (StoreOptions, error) { return optionsFromLookup(os.LookupEnv) }

func optionsFromLookup(lookup func(string) (string, bool)) (StoreOptions, error) {
	var o StoreOptions
	if v, ok := lookup(EnvBucketSizeLimit); ok && v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return o, fmt.Errorf("%w: %s=%q is not an integer number of bytes", ErrBadOptions, EnvBucketSizeLimit, v)
		}
		o.BucketSizeLimit = n
	}
	if v, ok := lookup(EnvBucketKeysLimit); ok && v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return o, fmt.Errorf("%w: %s=%q is not an integer", ErrBadOptions, EnvBucketKeysLimit, v)
		}
		o.BucketKeysLimit = n
	}
	if v, ok := lookup(EnvAdoptUnmarked); ok && v != "" {
		switch strings.TrimSpace(strings.ToLower(v)) {
		case "1", "true", "yes":
			o.AdoptUnmarked = true
		case "0", "false", "no":
		default:
			return o, fmt.Errorf("%w: %s=%q is not 0 or 1", ErrBadOptions, EnvAdoptUnmarked, v)
		}
	}
	if _, err := o.withDefaults(); err != nil {
		return o, err
	}
	return o, nil
}

// withDefaults fills zero limits and validates the rest.
func (o StoreOptions) withDefaults() (StoreOptions, error) {
	if o.BucketSizeLimit == 0 {
		o.BucketSizeLimit = DefaultBucketSizeLimit
	}
	if o.BucketKeysLimit == 0 {
		o.BucketKeysLimit = DefaultBucketKeysLimit
	}
	if o.BucketSizeLimit < 1 || o.BucketSizeLimit > MaxBucketSizeLimit {
		return o, fmt.Errorf("%w: bucket size limit %d outside [1, %d] (%s)", ErrBadOptions, o.BucketSizeLimit, MaxBucketSizeLimit, EnvBucketSizeLimit)
	}
	if o.BucketKeysLimit < 1 || o.BucketKeysLimit > MaxBucketKeysLimit {
		return o, fmt.Errorf("%w: bucket keys limit %d outside [1, %d] (%s)", ErrBadOptions, o.BucketKeysLimit, MaxBucketKeysLimit, EnvBucketKeysLimit)
	}
	if o.FS == nil {
		o.FS = fsys.OS{}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.FloorRetention == 0 {
		o.FloorRetention = DefaultFloorRetention
	}
	if o.FloorRetention < MaxGrantLifetime+MaxClockSkew {
		return o, fmt.Errorf("%w: tombstone floor retention %s is shorter than the grant lifetime plus clock skew (%s)", ErrBadOptions, o.FloorRetention, MaxGrantLifetime+MaxClockSkew)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MetadataReserve < 0 || o.MetadataReserve > MaxMetadataReserve {
		return o, fmt.Errorf("%w: metadata reserve %d outside [0, %d] (%s)", ErrBadOptions, o.MetadataReserve, MaxMetadataReserve, EnvMetadataReserve)
	}
	return o, nil
}
