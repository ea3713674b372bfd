// Package dfsalloc owns the space of the shared DFS root: which byte range
// of which file below MOONCAKE_DFS_ROOT_DIR holds which object's DFS replica.
// It offers two allocators behind one Allocator interface:
//
//   - shard (the default): a fixed set of dfs_shard_<NN>.data files, the
//     shard chosen by a stable hash of the key, each an aligned offset
//     allocator whose freed ranges are reused only after a deferral;
//   - bucket: immutable, append-only bucket_<16-digit id>.data files whose
//     ranges are never reused and whose space is reclaimed only by deleting
//     a whole bucket.
//
// The allocator state is part of the replicated FSM, so the package is pure:
// no I/O, no clock (time arrives as a `now` carried in the Raft command), no
// randomness, and no map iteration order in any result or record. File
// work (create and preallocate, delete) is recorded as intents
// (PendingFileOps) that the leader performs and confirms with later
// commands. State is written to and restored from snapshot records
// (Records, Restore) byte-identically.
//
// An Allocator is not safe for concurrent use; the FSM's lock guards it.
// PlanEviction, PendingFileOps, Stats and Records only read.
package dfsalloc
