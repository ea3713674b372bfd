package fsm

import "sexton/api"

// Results of Apply, one per command type (returned as pointers). Err is nil
// on success; a non-nil Err means the command was rejected and changed
// nothing but the applied index.
//
// Duplicate (on the results of commands that carry a session) is true when
// the answer came from the session table and nothing was executed: either
// the first answer to this (client, seq), returned again, or
// OUTCOME_UNKNOWN when that answer was already forgotten.

// EpochBeginResult answers EpochBegin.
type EpochBeginResult struct{ MasterEpoch, ClusterID uint64 }

// MountResult answers MountLocalDisk. On SEGMENT_ALREADY_EXISTS (an
// identical repeat) MountEpoch is the current, unchanged epoch.
type MountResult struct {
	Err                                *api.Error
	MountEpoch, MasterEpoch, ClusterID uint64
}

// UnmountResult answers UnmountLocalDisk.
type UnmountResult struct{ Err *api.Error }

// PutStartResult answers PutStart with the new PENDING incarnation.
type PutStartResult struct {
	Err         *api.Error
	Incarnation api.ObjectIncarnation
	// Replicas are the pending incarnation's replicas, DFS descriptors
	// filled in by the allocator. Shared with the state: read only.
	Replicas  []api.ReplicaDescriptor
	Duplicate bool
}

// PutEndResult answers PutEnd and PutRevoke; TasksCreated counts the delete
// tasks for the superseded (PutEnd) or abandoned (PutRevoke) copies.
type PutEndResult struct {
	Err          *api.Error
	TasksCreated int
	Duplicate    bool
}

// RemoveResult answers Remove: one result per requested key, in order,
// duplicates included. TasksCreated counts the tasks this entry created
// (none for a span answered from the session table).
type RemoveResult struct {
	Results      []api.KeyResult
	TasksCreated int
	// Duplicate is true when every span (or the one unspanned request) was
	// answered from the session table.
	Duplicate bool
	// SpanDuplicate has one flag per span of a spanned Remove, in order
	// (nil for an unspanned one): that span was answered from the session
	// table and nothing of it executed.
	SpanDuplicate []bool
}

// AckResult answers LocalDeleteAck: Dropped terminal results, Kept
// retryable ones, Unknown results that matched no task exactly.
type AckResult struct {
	Err                    *api.Error
	Dropped, Kept, Unknown int
	// DroppedCreated is each dropped task's creation time (the leader's
	// clock in the entry that created it), for the leader's deletion-lag
	// metric; a result only, never state.
	DroppedCreated []int64
}

// RetireResult answers RetireStorage.
type RetireResult struct {
	Err     *api.Error
	Dropped int
}

// DropResult answers DropReplicas: the refs whose replica on the segment
// was dropped, in request order. A ref is left out when the segment's
// replica is not the named COMPLETE incarnation, or when an older
// incarnation of its key still has a pending delete task (the newest copy
// goes last, invariant 7).
type DropResult struct {
	Err     *api.Error
	Dropped []api.ObjectRef
}
