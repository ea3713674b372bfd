package snapshot

import "sexton/api"

// Format versions.
const (
	Format110 = "1.1.0" // written and read
	Format100 = "1.0.0" // read only
)

// Section names of format 1.1.0. 1.0.0 has only metadata and segments.
const (
	SectionMetadata   = "metadata"
	SectionSegments   = "segments"
	SectionTasks      = "local_delete_tasks"
	SectionState      = "state"
	SectionDFSBuckets = "dfs_buckets"
)

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
}
