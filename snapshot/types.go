package snapshot

import "sexton/api"

// Format versions.
const (
	Format140 = "1.4.0" // written and read
	Format130 = "1.3.0" // read; written only when asked for by name
	Format120 = "1.2.0" // read; written only when asked for by name
	Format110 = "1.1.0" // read; written only when asked for by name
	Format100 = "1.0.0" // read only
)

// atLeast120 reports whether format has 1.2.0's sessions and fields.
func atLeast120(format string) bool {
	return format == Format120 || format == Format130 || format == Format140
}

// atLeast140 reports whether format has 1.4.0's fields (the legacy
// settings, the rebuild window's, a segment's rebuild membership and a
// job's kept keys).
func atLeast140(format string) bool { return format == Format140 }

// Header opens every snapshot stream.
type Header struct {
	Format    string `msgpack:"format"`
	ClusterID uint64 `msgpack:"cluster"`
	LastIndex uint64 `msgpack:"index"`
	LastTerm  uint64 `msgpack:"term"`
	Created   int64  `msgpack:"created"` // unix nanoseconds, from the replicated state, never a local clock
}

// ObjectState is the lifecycle state of one incarnation.
type ObjectState uint8

const (
	ObjectPending  ObjectState = 1
	ObjectComplete ObjectState = 2
)

// Object is one incarnation of one key (a key with a COMPLETE and a PENDING
// incarnation is two records, in incarnation order).
type Object struct {
	Key         string                  `msgpack:"key"`
	Tenant      string                  `msgpack:"tenant"`
	Size        int64                   `msgpack:"size"`
	Incarnation api.ObjectIncarnation   `msgpack:"inc"`
	State       ObjectState             `msgpack:"state"`
	Created     int64                   `msgpack:"created"`
	PutID       string                  `msgpack:"put_id"`
	Replicas    []api.ReplicaDescriptor `msgpack:"replicas"`
}

// Segment is one LOCAL_DISK segment's mount state.
type Segment struct {
	ID           api.SegmentID    `msgpack:"id"`
	ClientID     string           `msgpack:"client"`
	Pool         string           `msgpack:"pool"`
	Capacity     int64            `msgpack:"cap"`
	Capabilities []api.Capability `msgpack:"caps"`
	Endpoint     string           `msgpack:"ep"`
	MountEpoch   uint64           `msgpack:"epoch"`
	Mounted      bool             `msgpack:"mounted"`
	Retired      bool             `msgpack:"retired"`
	// Process (1.2.0) is the owner process's id; absent when empty.
	Process string `msgpack:"process,omitempty"`
	// RebuildMember (1.4.0) says a rebuilt cluster counts the segment as its own
	// (scanned by the rebuild, or joined never bound): a holder whose
	// marker names the lost cluster mounts only such a segment. Absent
	// when false.
	RebuildMember bool `msgpack:"rebuild_member,omitempty"`
}

// Task is one pending local-delete task.
type Task = api.LocalDeleteTask

// AuditEntry records an operator's force-drop of a segment's tasks.
type AuditEntry struct {
	Index        uint64        `msgpack:"index"`
	Segment      api.SegmentID `msgpack:"seg"`
	By           string        `msgpack:"by"`
	Reason       string        `msgpack:"reason"`
	DroppedTasks int           `msgpack:"dropped"`
	At           int64         `msgpack:"at"`
}

// State holds the FSM's scalar state and counters.
type State struct {
	MasterEpoch uint64       `msgpack:"master_epoch"`
	NextTaskID  uint64       `msgpack:"next_task_id"`
	LeaderID    string       `msgpack:"leader"`
	LeaderAddr  string       `msgpack:"leader_rpc"`
	LastNow     int64        `msgpack:"last_now"`
	Audit       []AuditEntry `msgpack:"audit"`

	// 1.2.0 and later, each absent when zero:
	// Settings are the replicated settings, present once a Settings entry
	// was applied (zero fields: defaults).
	Settings *api.Settings `msgpack:"settings,omitempty"`
	// GrantKey signs write grants; empty or api.GrantKeyLen bytes.
	GrantKey []byte `msgpack:"grant_key,omitempty"`
	// SessionClock is the session table's clock (largest entry time seen).
	SessionClock int64 `msgpack:"session_clock,omitempty"`
	// IncBase is what a rebuilt cluster adds to a Raft index to make an
	// incarnation's Low (fsm RebuildBegin): above every incarnation the
	// rebuild saw on the holders. Zero for a cluster that was never
	// rebuilt.
	IncBase uint64 `msgpack:"inc_base,omitempty"`
	// RebuildCluster is the cluster id a rebuild in progress (or done)
	// adopts; zero for a cluster that was never rebuilt.
	RebuildCluster uint64 `msgpack:"rebuild_cluster,omitempty"`
	// 1.4.0 and later, each absent when zero:
	// Legacy are the settings a state without replicated settings (Settings
	// nil) applies under: what the build before replicated settings took
	// from its flags (the registry capacity), kept until the first
	// Settings entry makes settings replicated. Absent: the defaults.
	// Never present together with Settings.
	Legacy *api.Settings `msgpack:"legacy_settings,omitempty"`
	// RebuildClosed says `operator rebuild --close` ended the rebuild's
	// adoption window. Absent when false.
	RebuildClosed bool `msgpack:"rebuild_closed,omitempty"`
	// RebuildRemoved is the removal memory of an open adoption window:
	// the RebuildRemovedDigestLen-byte digests of the keys removed since
	// the rebuild began, sorted ascending, concatenated; at most
	// MaxRebuildRemoved of them. Absent when empty.
	RebuildRemoved []byte `msgpack:"rebuild_removed,omitempty"`
	// RebuildOverflow says the removal memory outgrew MaxRebuildRemoved
	// and was dropped. Absent when false.
	RebuildOverflow bool `msgpack:"rebuild_overflow,omitempty"`
	// IncBlocks are the live reserved incarnation blocks of one-commit
	// puts, ascending and disjoint; at most MaxIncBlocks. Absent when
	// none.
	IncBlocks []IncBlock `msgpack:"inc_blocks,omitempty"`
	// RebuildBase is the incarnation base a rebuilt cluster's table was
	// first served under: every copy of the lost cluster is at or below
	// it, every copy the rebuilt cluster issued is above it. Unlike
	// IncBase it does not move when incarnation blocks are reserved.
	// Absent (zero) on a cluster that was never rebuilt.
	RebuildBase uint64 `msgpack:"rebuild_base,omitempty"`
}

// IncBlock is one reserved incarnation block: Lows Lo..Hi of the
// cluster's incarnations, committable until Expires (the fsm's time).
type IncBlock struct {
	Lo      uint64 `msgpack:"lo"`
	Hi      uint64 `msgpack:"hi"`
	Expires int64  `msgpack:"exp"`
}

// MaxIncBlocks bounds State.IncBlocks (the fsm's bound on live blocks).
const MaxIncBlocks = 64

// Bounds of the rebuild's removal memory (State.RebuildRemoved).
const (
	// RebuildRemovedDigestLen is one removed key's digest (SHA-256
	// prefix): fixed, so the memory's size does not depend on key lengths.
	RebuildRemovedDigestLen = 16
	// MaxRebuildRemoved bounds the digests: the state record must fit one
	// chunk (MaxChunkLen, 1 MiB) beside up to 100 audit entries of up to
	// 4 KiB reasons, and 32,768 digests are 512 KiB.
	MaxRebuildRemoved = 32768
)

// SessionRecord (1.2.0, section sessions) is one stored result of one
// client session, or, with Result nil, a session that keeps no result
// (only its floor). A session with several results is several records,
// consecutive, each repeating the session's fields, so no record grows
// with the number of results. Records are ordered by (client id, seq).
type SessionRecord struct {
	ClientID   string         `msgpack:"client"`
	Floor      uint64         `msgpack:"floor"`
	LastActive int64          `msgpack:"active"`
	Result     *SessionResult `msgpack:"result,omitempty"`
}

// SessionResult is the stored answer to one request: Kind is the fsm
// command type; which other fields are set depends on it.
type SessionResult struct {
	Seq      uint64                  `msgpack:"seq"`
	Kind     uint8                   `msgpack:"kind"`
	Err      *api.Error              `msgpack:"err,omitempty"`
	Inc      api.ObjectIncarnation   `msgpack:"inc,omitempty"`
	Count    int64                   `msgpack:"n,omitempty"`
	Replicas []api.ReplicaDescriptor `msgpack:"reps,omitempty"`
	Items    []SessionItem           `msgpack:"items,omitempty"`
	Settings *api.Settings           `msgpack:"settings,omitempty"`
}

// SessionItem is one key's or one batch item's part of a stored result.
type SessionItem struct {
	I        int64                   `msgpack:"i"`
	Tasks    int64                   `msgpack:"tasks,omitempty"`
	Err      *api.Error              `msgpack:"err,omitempty"`
	Replicas []api.ReplicaDescriptor `msgpack:"reps,omitempty"`
}
