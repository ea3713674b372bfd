// Package fsm owns sexton's replicated state: objects and their
// incarnations, LOCAL_DISK segments and their mount epochs, the
// LocalDeleteRegistry of pending delete tasks, the DFS allocator
// (fsm/dfsalloc) and its replicated configuration, the replicated settings
// (registry capacity, session bounds), the grant key, the client session
// table that makes mutating requests exactly-once, and every command that
// changes them. It also serves the read-only queries the master answers from
// that state (Get, List, Stat, FetchTasks, NotLive, ...), and carries the
// state across snapshots through the snapshot package.
//
// The package is pure: Apply does no I/O, reads no clock, draws no random
// number and never lets map iteration order reach a result or a snapshot, so
// every master that applies the same log reaches the same state and writes
// the same snapshot bytes.
package fsm
