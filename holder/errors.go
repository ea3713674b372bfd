package holder

import (
	"errors"

	"sexton/api"
)

// Sentinel errors. The ones that have a wire code are the api sentinels
// themselves, so errors.Is and api.CodeOf both work on what the store
// returns.
var (
	// ErrNotFound: no live record of (key, incarnation) on this segment.
	ErrNotFound = api.ErrObjectNotFound
	// ErrCorrupt: bytes on disk fail their checksum or do not decode.
	ErrCorrupt = api.ErrCorrupt
	// ErrConflict: a Put of a live (key, incarnation) with different bytes.
	ErrConflict = api.ErrObjectAlreadyExists
	// ErrTombstoned: a Put of an incarnation this segment has deleted; the
	// store refuses to bring it back.
	ErrTombstoned = errors.New("holder: incarnation was deleted on this segment")
	// ErrTooLarge: a value larger than the bucket size limit.
	ErrTooLarge = errors.New("holder: value exceeds the bucket size limit")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("holder: store is closed")
	// ErrDirectoryInUse: another process (or Store) holds the directory lock.
	ErrDirectoryInUse = errors.New("holder: directory is in use by another process")
	// ErrUnmarkedDirectory: a non-empty directory without an identity marker.
	ErrUnmarkedDirectory = errors.New("holder: non-empty directory has no identity marker")
	// ErrUnknownVersion: a marker or metadata file of a version this build
	// does not know.
	ErrUnknownVersion = errors.New("holder: unknown on-disk format version")
	// ErrBadOptions: invalid store options or environment values.
	ErrBadOptions = errors.New("holder: invalid store options")
	// ErrClusterMismatch: the directory belongs to another cluster.
	ErrClusterMismatch = errors.New("holder: directory belongs to another cluster")
	// ErrGCIntentPending: a GC intent is present that cannot be resolved
	// (unreadable, corrupt, unknown version); serving before it is
	// resolved could revive deleted records or lose live ones.
	ErrGCIntentPending = errors.New("holder: unresolved bucket GC intent")
	// ErrGCTargetInvalid: a COMMITTED GC intent names a target that is
	// missing or corrupt; its sources may already be gone, so the store
	// refuses to serve rather than guess.
	ErrGCTargetInvalid = errors.New("holder: committed GC target is missing or corrupt")
	// ErrEvictionUnavailable: live data cannot be evicted because the
	// master cannot be told first.
	ErrEvictionUnavailable = errors.New("holder: eviction needs the master and it is not available")
	// ErrGCRunning: StartGC was called on a store whose worker runs.
	ErrGCRunning = errors.New("holder: the GC worker is already running")
)

// errBucketRetired: an operation reached a bucket a GC round has replaced.
var errBucketRetired = errors.New("holder: bucket was retired by GC")
