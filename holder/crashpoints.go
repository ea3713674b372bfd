package holder

import "sexton/holder/crashpoint"

// persistPoints are the crash points of one metadata persistence sequence.
type persistPoints struct {
	beforeTmpWrite, afterTmpWrite, afterTmpFsync, afterRename, afterDirFsync *crashpoint.Point
}

// Crash points of BatchMarkDeleted, one between every step of DESIGN.md §5.
var tombstonePoints = persistPoints{
	beforeTmpWrite: crashpoint.New("tombstone.before-tmp-write"),
	afterTmpWrite:  crashpoint.New("tombstone.after-tmp-write"),
	afterTmpFsync:  crashpoint.New("tombstone.after-tmp-fsync"),
	afterRename:    crashpoint.New("tombstone.after-rename"),
	afterDirFsync:  crashpoint.New("tombstone.after-dir-fsync"),
}

// Crash points of a put commit: the data steps, then the metadata steps.
var (
	putAfterDataWrite = crashpoint.New("put.after-data-write")
	putAfterDataFsync = crashpoint.New("put.after-data-fsync")
	putPoints         = persistPoints{
		beforeTmpWrite: crashpoint.New("put.before-meta-tmp-write"),
		afterTmpWrite:  crashpoint.New("put.after-meta-tmp-write"),
		afterTmpFsync:  crashpoint.New("put.after-meta-tmp-fsync"),
		afterRename:    crashpoint.New("put.after-meta-rename"),
		afterDirFsync:  crashpoint.New("put.after-dir-fsync"),
	}
)

// TombstoneCrashPoints and PutCrashPoints list the store's crash point
// names in protocol order, for drills that walk them one by one.
var (
	TombstoneCrashPoints = []string{
		"tombstone.before-tmp-write", "tombstone.after-tmp-write", "tombstone.after-tmp-fsync",
		"tombstone.after-rename", "tombstone.after-dir-fsync",
	}
	PutCrashPoints = []string{
		"put.after-data-write", "put.after-data-fsync", "put.before-meta-tmp-write",
		"put.after-meta-tmp-write", "put.after-meta-tmp-fsync", "put.after-meta-rename", "put.after-dir-fsync",
	}
)
