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

// Crash points of BatchMarkDeleted, one between every step of docs/DESIGN.md §5.
var tombstonePoints = persistPoints{
	beforeTmpWrite: crashpoint.New("tombstone.before-tmp-write"),
	afterTmpWrite:  crashpoint.New("tombstone.after-tmp-write"),
	afterTmpFsync:  crashpoint.New("tombstone.after-tmp-fsync"),
	afterRename:    crashpoint.New("tombstone.after-rename"),
	afterDirFsync:  crashpoint.New("tombstone.after-dir-fsync"),
	tmpSync:        newSyncSite("tombstone.meta-tmp"),
	dirSync:        newSyncSite("tombstone.meta-dir"),
}

// Crash points of recording tombstone floors: for records a tombstone
// batch found absent, and for the tombstoned records a GC round is about
// to reclaim.
var (
	tombstoneFloorPoints = persistPoints{
		beforeTmpWrite: crashpoint.New("tombstone.floor.before-tmp-write"),
		afterTmpWrite:  crashpoint.New("tombstone.floor.after-tmp-write"),
		afterTmpFsync:  crashpoint.New("tombstone.floor.after-tmp-fsync"),
		afterRename:    crashpoint.New("tombstone.floor.after-rename"),
		afterDirFsync:  crashpoint.New("tombstone.floor.after-dir-fsync"),
		tmpSync:        newSyncSite("tombstone.floor-tmp"),
		dirSync:        newSyncSite("tombstone.floor-dir"),
	}
	gcFloorPoints = persistPoints{
		beforeTmpWrite: crashpoint.New("gc.floor.before-tmp-write"),
		afterTmpWrite:  crashpoint.New("gc.floor.after-tmp-write"),
		afterTmpFsync:  crashpoint.New("gc.floor.after-tmp-fsync"),
		afterRename:    crashpoint.New("gc.floor.after-rename"),
		afterDirFsync:  crashpoint.New("gc.floor.after-dir-fsync"),
		tmpSync:        newSyncSite("gc.floor-tmp"),
		dirSync:        newSyncSite("gc.floor-dir"),
	}
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
	putPoints            = persistPoints{
		beforeTmpWrite: crashpoint.New("put.before-meta-tmp-write"),
		afterTmpWrite:  crashpoint.New("put.after-meta-tmp-write"),
		afterTmpFsync:  crashpoint.New("put.after-meta-tmp-fsync"),
		afterRename:    crashpoint.New("put.after-meta-rename"),
		afterDirFsync:  crashpoint.New("put.after-dir-fsync"),
		tmpSync:        newSyncSite("put.meta-tmp"),
		dirSync:        newSyncSite("put.meta-dir"),
	}
)

// Crash points of a journal compaction: the .meta persistence, then the
// journal's truncation.
var (
	compactPoints = persistPoints{
		beforeTmpWrite: crashpoint.New("compact.before-tmp-write"),
		afterTmpWrite:  crashpoint.New("compact.after-tmp-write"),
		afterTmpFsync:  crashpoint.New("compact.after-tmp-fsync"),
		afterRename:    crashpoint.New("compact.after-rename"),
		afterDirFsync:  crashpoint.New("compact.after-dir-fsync"),
		tmpSync:        newSyncSite("compact.meta-tmp"),
		dirSync:        newSyncSite("compact.meta-dir"),
	}
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
	gcTargetMetaPoints     = persistPoints{
		beforeTmpWrite: crashpoint.New("gc.target-meta.before-tmp-write"),
		afterTmpWrite:  crashpoint.New("gc.target-meta.after-tmp-write"),
		afterTmpFsync:  crashpoint.New("gc.target-meta.after-tmp-fsync"),
		afterRename:    crashpoint.New("gc.target-meta.after-rename"),
		afterDirFsync:  crashpoint.New("gc.target-meta.after-dir-fsync"),
		tmpSync:        newSyncSite("gc.target-meta-tmp"),
		dirSync:        newSyncSite("gc.target-meta-dir"),
	}
	gcAfterCommitTmp     = crashpoint.New("gc.after-commit-tmp")
	gcAfterCommit        = crashpoint.New("gc.after-commit")
	gcAfterIndexSwitch   = crashpoint.New("gc.after-index-switch")
	gcAfterDrain         = crashpoint.New("gc.after-drain")
	gcAfterFirstUnlink   = crashpoint.New("gc.after-first-source-unlink")
	gcAfterUnlink        = crashpoint.New("gc.after-unlink")
	gcAfterDirFsync      = crashpoint.New("gc.after-dir-fsync")
	gcAfterIntentRemoved = crashpoint.New("gc.after-intent-removed")
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
