package fsm

import (
	"sexton/api"
)

// CommandType is the first byte of every Raft log entry sexton writes. The
// byte selects the body's Go type; the body is msgpack and carries its own
// schema version in "v". Never reuse or renumber a type.
type CommandType uint8

const (
	CmdEpochBegin       CommandType = 1
	CmdMountLocalDisk   CommandType = 2
	CmdUnmountLocalDisk CommandType = 3
	CmdPutStart         CommandType = 4
	CmdPutEnd           CommandType = 5
	CmdPutRevoke        CommandType = 6
	CmdRemove           CommandType = 7 // the versioned REMOVE intent
	CmdLocalDeleteAck   CommandType = 8 // LOCAL_DELETE_ACK
	CmdRetireStorage    CommandType = 9
	CmdDropReplicas     CommandType = 10 // a holder evicts live objects to free space
)

func (t CommandType) String() string {
	if s := specOf(t); s != nil {
		return s.name
	}
	return "Unknown"
}

// Command is a decoded log entry body: one of the types of the command
// table (commands.go).
type Command interface {
	Type() CommandType
	// leaderNow points at the body's Now, the leader's clock when it
	// proposed the entry (StampNow sets it, Apply reads it).
	leaderNow() *int64
}

// Every body's current schema version. A decoder accepts exactly the
// versions it knows; a body of any other version is refused, never read as
// the nearest known one.
const (
	EpochBeginV1       uint8 = 1
	MountLocalDiskV1   uint8 = 1
	UnmountLocalDiskV1 uint8 = 1
	PutStartV1         uint8 = 1
	PutEndV1           uint8 = 1
	PutRevokeV1        uint8 = 1
	RemoveV1           uint8 = 1
	LocalDeleteAckV1   uint8 = 1
	RetireStorageV1    uint8 = 1
	DropReplicasV1     uint8 = 1

	// Version 2 of the mutating commands carries the client's session
	// (exactly-once, api.Session); Remove v2 also carries per-key expected
	// incarnations and the group commit's spans; EpochBegin v2 the
	// cluster's grant key; MountLocalDisk v2 the holder's process id.
	// Version 1 bodies still decode (no session, no dedup); a v1 body
	// carrying a v2 field is refused.
	EpochBeginV2     uint8 = 2
	MountLocalDiskV2 uint8 = 2
	PutStartV2       uint8 = 2
	PutEndV2         uint8 = 2
	PutRevokeV2      uint8 = 2
	RemoveV2         uint8 = 2
)

// EpochBegin is the first proposal of a new leader. The first EpochBegin of
// a cluster also fixes its cluster id (the leader draws it at random).
type EpochBegin struct {
	V          uint8  `msgpack:"v"`
	Term       uint64 `msgpack:"term"`
	LeaderID   string `msgpack:"leader"`
	LeaderAddr string `msgpack:"leader_rpc"` // RPC address, so followers can redirect clients
	ClusterID  uint64 `msgpack:"cluster"`
	// GrantKey (v2) is the key write grants are signed with, drawn by the
	// leader. Like ClusterID it is stored once: the first EpochBegin that
	// carries one while the state has none sets it for good. Empty or
	// exactly api.GrantKeyLen bytes.
	GrantKey []byte `msgpack:"grant_key,omitempty"`
	Now      int64  `msgpack:"now"`
}

// MountLocalDisk mounts (or re-mounts) a LOCAL_DISK segment.
type MountLocalDisk struct {
	V            uint8            `msgpack:"v"`
	ClientID     string           `msgpack:"client"`
	Segment      api.SegmentID    `msgpack:"seg"`
	Pool         string           `msgpack:"pool"`
	Capacity     int64            `msgpack:"cap"`
	Capabilities []api.Capability `msgpack:"caps"`
	Endpoint     string           `msgpack:"ep"`
	// Process (v2) names the holder process (random per start): a mount
	// by the segment's owner from another process starts a new epoch, so
	// a restarted or second process always fences the previous one.
	Process string `msgpack:"process,omitempty"`
	// MarkerCluster (v2, optional) is the cluster id the holder's marker
	// named when it asked to mount; nil when the holder did not say (an
	// older build). A rebuilt cluster decides with it whether the segment
	// is a late holder of the lost cluster (apply_mount.go).
	MarkerCluster *uint64 `msgpack:"marker,omitempty"`
	Now           int64   `msgpack:"now"`
}

// UnmountLocalDisk releases a segment; its pending tasks stay.
type UnmountLocalDisk struct {
	V       uint8         `msgpack:"v"`
	Segment api.SegmentID `msgpack:"seg"`
	Epoch   uint64        `msgpack:"epoch"`
	Now     int64         `msgpack:"now"`
}

// PutStart creates a PENDING incarnation with leader-chosen replicas. Its
// body is a PutStartItem's fields between V and Session (the encoder
// inlines the embedded item).
type PutStart struct {
	V uint8 `msgpack:"v"`
	PutStartItem
	Session api.Session `msgpack:"sess,omitempty"` // v2
	Now     int64       `msgpack:"now"`
}

// PutEnd completes a PENDING incarnation.
type PutEnd struct {
	V           uint8                 `msgpack:"v"`
	Key         string                `msgpack:"key"`
	Incarnation api.ObjectIncarnation `msgpack:"inc"`
	Session     api.Session           `msgpack:"sess,omitempty"` // v2
	Now         int64                 `msgpack:"now"`
}

// PutRevoke drops a PENDING incarnation. Its body is PutEnd's: the
// pending incarnation of a key, under the client's session.
type PutRevoke PutEnd

// Remove is the REMOVE intent for one or many keys (BatchRemove and the
// leader's group commit of concurrent Removes are one entry).
//
// Version 2: IfInc is empty or has one incarnation per key (zero means
// unconditional); a key whose COMPLETE incarnation is not the named one
// fails with INCARNATION_MISMATCH and is untouched. Spans partitions Keys
// (and IfInc) in order into the requests the leader merged into this
// entry, each with its own session; empty Spans means the whole entry is
// one request with Session (which must be zero when Spans is given).
type Remove struct {
	V       uint8                   `msgpack:"v"`
	Keys    []string                `msgpack:"keys"`
	IfInc   []api.ObjectIncarnation `msgpack:"if_inc,omitempty"` // v2
	Spans   []RemoveSpan            `msgpack:"spans,omitempty"`  // v2
	Session api.Session             `msgpack:"sess,omitempty"`   // v2
	Now     int64                   `msgpack:"now"`
}

// RemoveSpan is one client request inside a group-committed Remove: the
// next N keys of the entry, answered and deduplicated under Session.
type RemoveSpan struct {
	Session api.Session `msgpack:"sess"`
	N       int         `msgpack:"n"`
}

// LocalDeleteAck is LOCAL_DELETE_ACK: a holder's outcomes for fetched tasks.
type LocalDeleteAck struct {
	V       uint8            `msgpack:"v"`
	Segment api.SegmentID    `msgpack:"seg"`
	Epoch   uint64           `msgpack:"epoch"`
	Results []api.TaskResult `msgpack:"results"`
	Now     int64            `msgpack:"now"`
}

// RetireStorage is an operator's force-drop of a lost segment's tasks.
type RetireStorage struct {
	V       uint8         `msgpack:"v"`
	Segment api.SegmentID `msgpack:"seg"`
	By      string        `msgpack:"by"`
	Reason  string        `msgpack:"reason"`
	Now     int64         `msgpack:"now"`
}

// DropReplicas removes one segment's replicas of the named incarnations:
// the holder is evicting live data to get under its high watermark and
// tells the master first. An object left with no replica is gone (a cache
// eviction, not a user's delete: no tasks, the holder drops the bytes
// itself). The leader leaves out objects under a read lease.
type DropReplicas struct {
	V       uint8           `msgpack:"v"`
	Segment api.SegmentID   `msgpack:"seg"`
	Epoch   uint64          `msgpack:"epoch"`
	Refs    []api.ObjectRef `msgpack:"refs"`
	Now     int64           `msgpack:"now"`
}
