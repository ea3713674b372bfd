package master

import (
	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
)

// testHooks are the points where this package's tests pause a node or act
// at an exact step. They are unexported fields of Config, nil unless a
// test sets them, and each call site is one nil check; master/DESIGN.md
// says why they are compiled in rather than behind a build tag.
type testHooks struct {
	// beforeReady runs between a new leader's committed EpochBegin and
	// marking it ready.
	beforeReady func(*Node)
	// beforeApply runs in propose right before a command is handed to raft.
	beforeApply func(*Node, fsm.Command)
	// fetchScan runs each time a fetch (long poll) reads the fsm for its
	// segment: once at the start, once per wake-up.
	fetchScan func(seg api.SegmentID)
	// afterRead runs between a Get's fsm read and its lease grant.
	afterRead func(keys []string)
	// afterEvictCheck runs between an eviction's lease check and its
	// proposal.
	afterEvictCheck func()
	// wrapStore wraps the log and stable store raft is given (inside the
	// store guard): fault injection without a full file system.
	wrapStore func(raft.LogStore, raft.StableStore) (raft.LogStore, raft.StableStore)
	// probe replaces the store guard's probe write to the data dir.
	probe func() error
}
