package holder

import "sexton/holder/crashpoint"

// followBeforeAck sits between a durable tombstone and its ack: a crash
// there leaves the task pending with the record already tombstoned, so the
// replay after restart must answer AlreadyRemoved.
var followBeforeAck = crashpoint.New("follow.before-ack")

// persistPoints are the crash points of one metadata persistence sequence.
type persistPoints struct {
	beforeTmpWrite, afterTmpWrite, afterTmpFsync, afterRename, afterDirFsync *crashpoint.Point
	// tmpSync and dirSync are the sequence's two fsyncs (syncsites.go).
	tmpSync, dirSync *syncSite
}

// newPersistPoints registers a persistence sequence's points: prefix then
// .before-<infix>tmp-write, .after-<infix>tmp-write,
// .after-<infix>tmp-fsync, .after-<infix>rename and .after-dir-fsync, and
// the fsyncs <sync>-tmp and <sync>-dir.
func newPersistPoints(prefix, infix, sync string) persistPoints {
	at := func(step string) *crashpoint.Point { return crashpoint.New(prefix + "." + step) }
	return persistPoints{
		beforeTmpWrite: at("before-" + infix + "tmp-write"),
		afterTmpWrite:  at("after-" + infix + "tmp-write"),
		afterTmpFsync:  at("after-" + infix + "tmp-fsync"),
		afterRename:    at("after-" + infix + "rename"),
		afterDirFsync:  at("after-dir-fsync"),
		tmpSync:        newSyncSite(sync + "-tmp"),
		dirSync:        newSyncSite(sync + "-dir"),
	}
}

// Crash points of BatchMarkDeleted, one between every step of docs/DESIGN.md §5.
var tombstonePoints = newPersistPoints("tombstone", "", "tombstone.meta")

// Crash points of recording tombstone floors: for records a tombstone
// batch found absent, and for the tombstoned records a GC round is about
// to reclaim.
var (
	tombstoneFloorPoints = newPersistPoints("tombstone.floor", "", "tombstone.floor")
	gcFloorPoints        = newPersistPoints("gc.floor", "", "gc.floor")
)

// FloorCrashPoints lists the floor persistence points of a tombstone
// batch that found its record absent. (The GC round's are in
// GCCrashPoints.)
var FloorCrashPoints = []string{
	"tombstone.floor.before-tmp-write", "tombstone.floor.after-tmp-write", "tombstone.floor.after-tmp-fsync",
	"tombstone.floor.after-rename", "tombstone.floor.after-dir-fsync",
}

// Crash points of a put commit: the data steps, then the metadata steps
// (a journal record, or the first commit's whole .meta).
var (
	putAfterDataWrite    = crashpoint.New("put.after-data-write")
	putAfterDataFsync    = crashpoint.New("put.after-data-fsync")
	putAfterJournalWrite = crashpoint.New("put.after-journal-write")
	putAfterJournalFsync = crashpoint.New("put.after-journal-fsync")
	putPoints            = newPersistPoints("put", "meta-", "put.meta")
)

// Crash points of a journal compaction: the .meta persistence, then the
// journal's truncation.
var (
	compactPoints         = newPersistPoints("compact", "", "compact.meta")
	compactAfterTruncate  = crashpoint.New("compact.after-truncate")
	compactAfterDataFsync = crashpoint.New("compact.after-data-fsync")
)

// CompactCrashPoints lists a journal compaction's crash points in order.
var CompactCrashPoints = []string{
	"compact.after-data-fsync", "compact.before-tmp-write", "compact.after-tmp-write", "compact.after-tmp-fsync",
	"compact.after-rename", "compact.after-dir-fsync", "compact.after-truncate",
}

// TombstoneCrashPoints, PutCrashPoints and PutNewBucketCrashPoints list the store's crash point
// names in protocol order, for drills that walk them one by one.
var (
	TombstoneCrashPoints = []string{
		"tombstone.before-tmp-write", "tombstone.after-tmp-write", "tombstone.after-tmp-fsync",
		"tombstone.after-rename", "tombstone.after-dir-fsync",
	}
	// PutCrashPoints: a put of small values appended to a bucket that has
	// its .meta (every commit but a bucket's first): data written, then a
	// journal record carrying the values, fdatasynced.
	PutCrashPoints = []string{
		"put.after-data-write", "put.after-journal-write", "put.after-journal-fsync",
	}
	// PutLargeCrashPoints: the same for a commit whose values are too large
	// to copy into the journal: the data is fdatasynced first.
	PutLargeCrashPoints = []string{
		"put.after-data-write", "put.after-data-fsync", "put.after-journal-write", "put.after-journal-fsync",
	}
	// PutStreamCrashPoints: a streamed value (Store.PutStream) appended
	// to a bucket that has its .meta: part of its bytes written as they
	// arrive, then the commit of a large value.
	PutStreamCrashPoints = []string{
		"put.stream-mid-value", "put.after-data-write", "put.after-data-fsync", "put.after-journal-write", "put.after-journal-fsync",
	}
	// PutNewBucketCrashPoints: the first commit into a new bucket, which
	// writes the bucket's first .meta (and so makes its files' entries
	// durable with one directory fsync).
	PutNewBucketCrashPoints = []string{
		"put.after-data-write", "put.after-data-fsync", "put.before-meta-tmp-write",
		"put.after-meta-tmp-write", "put.after-meta-tmp-fsync", "put.after-meta-rename", "put.after-dir-fsync",
	}
)

// Crash points of a GC round (docs/DESIGN.md §6), one between every step.
var (
	gcAfterPrepareTmp      = crashpoint.New("gc.after-prepare-tmp")
	gcAfterPrepare         = crashpoint.New("gc.after-prepare")
	gcAfterCopy            = crashpoint.New("gc.after-copy")
	gcAfterTargetDataFsync = crashpoint.New("gc.after-target-data-fsync")
	gcTargetMetaPoints     = newPersistPoints("gc.target-meta", "", "gc.target-meta")
	gcAfterCommitTmp       = crashpoint.New("gc.after-commit-tmp")
	gcAfterCommit          = crashpoint.New("gc.after-commit")
	gcAfterIndexSwitch     = crashpoint.New("gc.after-index-switch")
	gcAfterDrain           = crashpoint.New("gc.after-drain")
	gcAfterFirstUnlink     = crashpoint.New("gc.after-first-source-unlink")
	gcAfterUnlink          = crashpoint.New("gc.after-unlink")
	gcAfterDirFsync        = crashpoint.New("gc.after-dir-fsync")
	gcAfterIntentRemoved   = crashpoint.New("gc.after-intent-removed")
)

// GCCrashPoints lists the GC round's crash points in protocol order: the
// floor of the tombstones it reclaims first, then the round. A round with
// fully dead sources only (no target) skips the nine from
// gc.after-prepare-tmp to gc.target-meta.after-dir-fsync.
var GCCrashPoints = []string{
	"gc.floor.before-tmp-write", "gc.floor.after-tmp-write", "gc.floor.after-tmp-fsync",
	"gc.floor.after-rename", "gc.floor.after-dir-fsync",
	"gc.after-prepare-tmp", "gc.after-prepare", "gc.after-copy", "gc.after-target-data-fsync",
	"gc.target-meta.before-tmp-write", "gc.target-meta.after-tmp-write", "gc.target-meta.after-tmp-fsync",
	"gc.target-meta.after-rename", "gc.target-meta.after-dir-fsync",
	"gc.after-commit-tmp", "gc.after-commit", "gc.after-index-switch", "gc.after-drain",
	"gc.after-first-source-unlink", "gc.after-unlink", "gc.after-dir-fsync", "gc.after-intent-removed",
}
