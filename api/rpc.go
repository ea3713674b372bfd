package api

// Method names of the master RPC. A method name is part of the wire format:
// never rename one, add a new one instead.
const (
	MethodPutStart                  = "PutStart"
	MethodPutEnd                    = "PutEnd"
	MethodPutRevoke                 = "PutRevoke"
	MethodBatchPutStart             = "BatchPutStart"
	MethodBatchPutEnd               = "BatchPutEnd"
	MethodPutGrant                  = "PutGrant"
	MethodPutCommit                 = "PutCommit"
	MethodBatchPutCommit            = "BatchPutCommit"
	MethodGet                       = "Get"
	MethodBatchGet                  = "BatchGet"
	MethodExist                     = "Exist"
	MethodRemove                    = "Remove"
	MethodBatchRemove               = "BatchRemove"
	MethodList                      = "List"
	MethodStat                      = "Stat"
	MethodMountLocalDisk            = "MountLocalDisk"
	MethodUnmountLocalDisk          = "UnmountLocalDisk"
	MethodHeartbeat                 = "Heartbeat"
	MethodFetchLocalDeleteTasks     = "FetchLocalDeleteTasks"
	MethodAckLocalDeleteTasks       = "AckLocalDeleteTasks"
	MethodReconcileLocalDiskObjects = "ReconcileLocalDiskObjects"
	MethodListLocalDiskReplicas     = "ListLocalDiskReplicas"
	MethodDropTombstonedReplicas    = "DropTombstonedReplicas"
	MethodStatus                    = "Status"
	MethodListTasks                 = "ListTasks"
	MethodListSegments              = "ListSegments"
	MethodRetireStorage             = "RetireStorage"
	MethodEvictLocalDiskObjects     = "EvictLocalDiskObjects"
	MethodRaftPeers                 = "RaftPeers"
	MethodRaftAddVoter              = "RaftAddVoter"
	MethodRaftRemovePeer            = "RaftRemovePeer"
	MethodRaftTransferLeadership    = "RaftTransferLeadership"
	MethodSnapshotSave              = "SnapshotSave"
	MethodSnapshotRestore           = "SnapshotRestore"
	MethodSettingsGet               = "SettingsGet"
	MethodSettingsSet               = "SettingsSet"
)

// Methods of a holder's data RPC.
const (
	MethodHolderWrite  = "HolderWrite"
	MethodHolderRead   = "HolderRead"
	MethodHolderScan   = "HolderScan"
	MethodHolderStatus = "HolderStatus"
	// MethodHolderListRecords pages through every record a holder keeps,
	// live and tombstoned, for `operator rebuild`.
	MethodHolderListRecords = "HolderListRecords"
)

// Empty is the body of a call that takes or returns nothing.
type Empty struct{}

// PutStartRequest asks the leader to place a new incarnation of Key.
type PutStartRequest struct {
	Key           string `msgpack:"key"`
	Tenant        string `msgpack:"tenant,omitempty"`
	Size          int64  `msgpack:"size"`
	ReplicaNum    int    `msgpack:"replicas"`
	DFSReplicaNum int    `msgpack:"dfs_replicas,omitempty"`
	IfAbsent      bool   `msgpack:"if_absent,omitempty"`
	PutID         string `msgpack:"put_id,omitempty"`
	// Pool, if set, restricts placement to that pool.
	Pool string `msgpack:"pool,omitempty"`
	// Exclude names segments the placement must avoid: a client whose
	// write to a holder failed revokes the put and starts it again away
	// from that holder.
	Exclude []SegmentID `msgpack:"exclude,omitempty"`
	// Prefer names where the first replica should go when one of them can
	// take it (a segment id, a holder endpoint, or an endpoint's host):
	// Mooncake's preferred_segment, a client asking for a replica on its
	// own machine. Placement falls back to any segment when none can.
	Prefer []string `msgpack:"prefer,omitempty"`
	// Session makes a retried PutStart return the first answer instead of
	// starting a second put (invariant 10). In a BatchPutStart the batch's
	// session is used and the items' are ignored.
	Session Session `msgpack:"sess,omitempty"`
}

// PutStartResponse names the new incarnation and where to write it.
type PutStartResponse struct {
	Incarnation ObjectIncarnation `msgpack:"inc"`
	Replicas    []ReplicaLocation `msgpack:"replicas"`
}

// PutGrant takes a PutStartRequest (LOCAL_DISK replicas only, no session:
// it commits nothing) and answers a PutStartResponse: an incarnation from
// the leader's reserved block and a write grant per replica. The client
// writes every replica and then sends PutCommit.

// PutCommitRequest makes a granted, written put the key's value in one
// Raft entry. Replicas are PutGrant's answer as received: each carries the
// grant the leader checks, so only granted segments are recorded.
type PutCommitRequest struct {
	Key         string            `msgpack:"key"`
	Tenant      string            `msgpack:"tenant,omitempty"`
	Size        int64             `msgpack:"size"`
	IfAbsent    bool              `msgpack:"if_absent,omitempty"`
	PutID       string            `msgpack:"put_id,omitempty"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
	Replicas    []ReplicaLocation `msgpack:"replicas"`
	Session     Session           `msgpack:"sess,omitempty"`
}

// BatchPutCommitRequest commits many granted, written puts in one Raft
// entry (at most MaxBatchPutItems, distinct keys); it is answered by a
// BatchPutEndResponse, one result per item in order.
type BatchPutCommitRequest = BatchRequest[PutCommitRequest]

// BatchRequest is a batch mutation: its items, carried in one Raft entry,
// and the batch's session.
type BatchRequest[I any] struct {
	Items   []I     `msgpack:"items"`
	Session Session `msgpack:"sess,omitempty"`
}

// BatchResponse answers a batch: one result per item, in request order.
type BatchResponse[R any] struct {
	Results []R `msgpack:"results"`
}

// PutEndRequest completes, and PutRevokeRequest abandons, a pending put.
type PutEndRequest struct {
	Key         string            `msgpack:"key"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
	Session     Session           `msgpack:"sess,omitempty"`
}

// PutRevokeRequest abandons a pending put.
type PutRevokeRequest = PutEndRequest

// MaxBatchPutItems bounds the objects of one BatchPutStart or BatchPutEnd:
// each is one Raft entry, kept small enough to replicate quickly.
const MaxBatchPutItems = 256

// BatchPutStartRequest starts many puts in one Raft entry. Keys must be
// distinct: a key named twice refuses the whole request.
type BatchPutStartRequest = BatchRequest[PutStartRequest]

// PutStartResult is one item's answer in a BatchPutStart; on success Err is
// nil and the fields are those of a PutStartResponse.
type PutStartResult struct {
	Incarnation ObjectIncarnation `msgpack:"inc"`
	Replicas    []ReplicaLocation `msgpack:"replicas,omitempty"`
	Err         *Error            `msgpack:"err,omitempty"`
}

// BatchPutStartResponse answers BatchPutStart, in request order.
type BatchPutStartResponse = BatchResponse[PutStartResult]

// BatchPutEndRequest completes many pending puts in one Raft entry.
type BatchPutEndRequest = BatchRequest[PutEndRequest]

// BatchPutEndResponse answers BatchPutEnd, in request order.
type BatchPutEndResponse = BatchResponse[KeyResult]

// KeyRequest names one key.
type KeyRequest struct {
	Key string `msgpack:"key"`
}

// KeysRequest names many keys; results come back in the same order.
type KeysRequest struct {
	Keys []string `msgpack:"keys"`
}

// ObjectInfo is the newest COMPLETE incarnation of a key.
type ObjectInfo struct {
	Key         string            `msgpack:"key"`
	Tenant      string            `msgpack:"tenant,omitempty"`
	Size        int64             `msgpack:"size"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
	Created     int64             `msgpack:"created"`
	Replicas    []ReplicaLocation `msgpack:"replicas"`
}

// GetResponse answers Get.
type GetResponse struct {
	Object ObjectInfo `msgpack:"object"`
}

// GetResult is one key's answer in a BatchGet.
type GetResult struct {
	Object *ObjectInfo `msgpack:"object,omitempty"`
	Err    *Error      `msgpack:"err,omitempty"`
}

// BatchGetResponse answers BatchGet, in request order.
type BatchGetResponse = BatchResponse[GetResult]

// ExistResponse answers Exist, in request order.
type ExistResponse struct {
	Exists []bool `msgpack:"exists"`
}

// RemoveRequest removes one key. IfIncarnation, when set, makes the remove
// conditional: it fails with INCARNATION_MISMATCH, changing nothing, unless
// the key's COMPLETE incarnation is exactly that one.
type RemoveRequest struct {
	Key           string             `msgpack:"key"`
	IfIncarnation *ObjectIncarnation `msgpack:"if_inc,omitempty"`
	Session       Session            `msgpack:"sess,omitempty"`
}

// RemoveItem is one key of a batch remove with its condition: removed
// only while its incarnation is IfInc (zero: unconditional). Go callers
// pass these (client.(*Client).RemoveItems); the wire keeps the keys and
// the conditions as parallel slices (BatchRemoveRequest).
type RemoveItem struct {
	Key   string
	IfInc ObjectIncarnation
}

// BatchRemoveRequest removes many keys in one Raft entry. IfIncarnations is
// empty, or has one entry per key where a zero incarnation means
// unconditional.
type BatchRemoveRequest struct {
	Keys           []string            `msgpack:"keys"`
	IfIncarnations []ObjectIncarnation `msgpack:"if_incs,omitempty"`
	Session        Session             `msgpack:"sess,omitempty"`
}

// KeyResult is one key's answer in a BatchRemove; Err is nil on success.
type KeyResult struct {
	Key string `msgpack:"key"`
	Err *Error `msgpack:"err,omitempty"`
}

// BatchRemoveResponse answers BatchRemove: one result per requested key, in
// request order, duplicates included.
type BatchRemoveResponse = BatchResponse[KeyResult]

// ListRequest lists keys with Prefix strictly after Cursor.
type ListRequest struct {
	Prefix string `msgpack:"prefix,omitempty"`
	Cursor string `msgpack:"cursor,omitempty"`
	Limit  int    `msgpack:"limit,omitempty"`
}

// ListResponse carries a page of objects in key order; NextCursor is empty
// on the last page.
type ListResponse struct {
	Objects    []ObjectInfo `msgpack:"objects"`
	NextCursor string       `msgpack:"next,omitempty"`
}

// StatResponse is ObjectInfo plus whether a newer put is in progress.
type StatResponse struct {
	Object         ObjectInfo         `msgpack:"object"`
	PendingPut     *ObjectIncarnation `msgpack:"pending,omitempty"`
	PendingDeletes int                `msgpack:"pending_deletes"`
}

// MountLocalDiskRequest mounts a holder's segment.
type MountLocalDiskRequest struct {
	ClientID     string       `msgpack:"client"`
	Segment      SegmentID    `msgpack:"seg"`
	Pool         string       `msgpack:"pool"`
	Capacity     int64        `msgpack:"cap"`
	Capabilities []Capability `msgpack:"caps"`
	Endpoint     string       `msgpack:"ep"`
	// Process is drawn at random by each holder process when it starts.
	// A mount from another process than the current owner's always
	// starts a new mount epoch, so a restarted holder, or a second process
	// on a copy of the directory, fences the one before it.
	Process string `msgpack:"proc,omitempty"`
	// MarkerCluster is the cluster id the holder's marker names at mount
	// time (a pointer to zero for a directory never bound to a cluster).
	// Nil is an older holder build that does not say: a rebuilt cluster
	// refuses such a mount of a segment it does not know, since it cannot
	// tell a late holder of the lost cluster from a new one.
	MarkerCluster *uint64 `msgpack:"marker,omitempty"`
}

// MountLocalDiskResponse gives the mount epoch the holder must present from
// now on. AlreadyMounted is set for an identical repeat mount
// (SEGMENT_ALREADY_EXISTS on the FSM level, which is not a failure here).
type MountLocalDiskResponse struct {
	MountEpoch     uint64 `msgpack:"epoch"`
	MasterEpoch    uint64 `msgpack:"master_epoch"`
	ClusterID      uint64 `msgpack:"cluster"`
	AlreadyMounted bool   `msgpack:"already"`
	// GrantKey checks the write grants of this cluster (WriteGrant).
	GrantKey []byte `msgpack:"grant_key,omitempty"`
}

// UnmountLocalDiskRequest releases a mount.
type UnmountLocalDiskRequest struct {
	Segment    SegmentID `msgpack:"seg"`
	MountEpoch uint64    `msgpack:"epoch"`
}

// HeartbeatRequest reports a holder's liveness and usage.
type HeartbeatRequest struct {
	ClientID   string    `msgpack:"client"`
	Segment    SegmentID `msgpack:"seg"`
	MountEpoch uint64    `msgpack:"epoch"`
	Used       int64     `msgpack:"used"`
	Capacity   int64     `msgpack:"cap"`
	DeadBytes  int64     `msgpack:"dead"`
	// KnownSegments is SegmentSetDigest of the segment ids the holder has
	// recorded for its cluster (zero: none yet, or an older build).
	KnownSegments uint64 `msgpack:"known_segs,omitempty"`
}

// HeartbeatResponse tells the holder the master epoch (a change means
// replay) and whether it must remount (its epoch is stale or unknown).
type HeartbeatResponse struct {
	MasterEpoch uint64 `msgpack:"master_epoch"`
	Remount     bool   `msgpack:"remount"`
	// Segments, sent when the holder's KnownSegments digest differs from
	// the cluster's, are the ids of every segment the cluster knows and
	// has not retired, sorted. The holder records them durably, so a
	// rebuild after the masters are lost learns from any holder which
	// segments exist (api/rebuild.go).
	Segments []SegmentID `msgpack:"segs,omitempty"`
	// ClusterID is the answering cluster's id, sent with Segments: the
	// holder records them only when it names the cluster its marker does.
	ClusterID uint64 `msgpack:"cluster,omitempty"`
}

// FetchTasksRequest asks for pending tasks of a segment. WaitMillis > 0
// makes it a long poll: the answer comes when tasks appear or the wait ends.
type FetchTasksRequest struct {
	Segment    SegmentID `msgpack:"seg"`
	MountEpoch uint64    `msgpack:"epoch"`
	Limit      int       `msgpack:"limit"`
	WaitMillis int64     `msgpack:"wait_ms,omitempty"`
	AfterID    uint64    `msgpack:"after,omitempty"`
}

// FetchTasksResponse carries at most MaxFetchLimit tasks in id order.
type FetchTasksResponse struct {
	Tasks       []LocalDeleteTask `msgpack:"tasks"`
	MasterEpoch uint64            `msgpack:"master_epoch"`
	More        bool              `msgpack:"more"`
}

// AckTasksRequest reports outcomes. Only terminal outcomes drop tasks.
// Failures reports tasks the holder tried and could not tombstone, with
// why: the leader keeps that as the task's last error (soft state, shown
// by ListTasks) and backs the task off; nothing is logged for them. An
// older master ignores the field.
type AckTasksRequest struct {
	Segment    SegmentID     `msgpack:"seg"`
	MountEpoch uint64        `msgpack:"epoch"`
	Results    []TaskResult  `msgpack:"results"`
	Failures   []TaskFailure `msgpack:"failures,omitempty"`
}

// TaskFailure is one task a holder could not tombstone this time.
type TaskFailure struct {
	TaskID uint64 `msgpack:"id"`
	Error  string `msgpack:"err"`
}

// MaxTaskErrorLen bounds a reported task error; longer texts are cut.
const MaxTaskErrorLen = 256

// AckTasksResponse says how many tasks the ack dropped.
type AckTasksResponse struct {
	Dropped int `msgpack:"dropped"`
}

// ReconcileRequest is one page of a holder's live (key, incarnation) set.
type ReconcileRequest struct {
	Segment    SegmentID   `msgpack:"seg"`
	MountEpoch uint64      `msgpack:"epoch"`
	Objects    []ObjectRef `msgpack:"objects"`
}

// ReconcileResponse names the refs of the page that are not live on the
// segment and that the holder should tombstone.
type ReconcileResponse struct {
	NotLive []ObjectRef `msgpack:"not_live"`
	// Undecided are refs not named yet that may be named later: a
	// one-commit put's incarnation whose block is still live (its
	// PutCommit may come), one that waits for an older incarnation's
	// delete task or DFS removal mark, or a not-live one a read lease
	// holds. The
	// holder asks about them again soon instead of at its next periodic
	// reconcile. Absent from masters that predate the field.
	Undecided []ObjectRef `msgpack:"undecided,omitempty"`
}

// ListReplicasRequest pages through the COMPLETE incarnations the
// master's table places on the segment, in key order, for keys strictly
// after After. A holder checks each against its store (the ghost check
// that follows a reconcile after a mount or a master epoch change).
type ListReplicasRequest struct {
	Segment    SegmentID `msgpack:"seg"`
	MountEpoch uint64    `msgpack:"epoch"`
	After      string    `msgpack:"after,omitempty"`
	Limit      int       `msgpack:"limit,omitempty"`
}

// ListReplicasResponse is one page: at most MaxReconcilePage refs (fewer,
// even none, when the master's scan budget ran out first), the cursor to
// go on from and whether keys remain.
type ListReplicasResponse struct {
	Refs []ObjectRef `msgpack:"refs"`
	Next string      `msgpack:"next,omitempty"`
	More bool        `msgpack:"more,omitempty"`
}

// DropTombstonedRequest names refs of a ListReplicas page that the holder
// holds tombstoned, by record or by its key's tombstone floor: copies that
// can never be read again. The master drops the segment's replica of each,
// only while the key's COMPLETE incarnation is still the named one. A ref
// the holder has no record of, and no floor for, is not evidence of a
// delete and is never sent.
type DropTombstonedRequest struct {
	Segment    SegmentID   `msgpack:"seg"`
	MountEpoch uint64      `msgpack:"epoch"`
	Refs       []ObjectRef `msgpack:"refs"`
}

// DropTombstonedResponse names the refs whose replica was dropped and
// counts the objects that, left with no replica, left the table.
type DropTombstonedResponse struct {
	Dropped []ObjectRef `msgpack:"dropped"`
	Objects int         `msgpack:"objects"`
}

// RetireStorageRequest force-drops a permanently lost segment's tasks.
type RetireStorageRequest struct {
	Segment SegmentID `msgpack:"seg"`
	By      string    `msgpack:"by"`
	Reason  string    `msgpack:"reason"`
}

// ListTasksRequest lists pending tasks, optionally of one segment.
type ListTasksRequest struct {
	Segment SegmentID `msgpack:"seg,omitempty"`
	Limit   int       `msgpack:"limit,omitempty"`
	// Key, when set, lists only that key's tasks (every segment), found
	// through the key's own entry rather than a scan of the registry.
	Key string `msgpack:"key,omitempty"`
}

// ListTasksResponse carries pending tasks in id order. Progress, when
// present (a master that knows it), has one entry per task, Progress[i]
// describing Tasks[i].
type ListTasksResponse struct {
	Tasks    []LocalDeleteTask `msgpack:"tasks"`
	Total    int               `msgpack:"total"`
	Progress []TaskProgress    `msgpack:"progress,omitempty"`
	// DFSRecordsPending (a key's listing only) counts the key's removal
	// records the leader has not yet written to the DFS root's journal:
	// until then a rebuild could bring the removed DFS value back, as it
	// could a LOCAL_DISK copy whose task is pending.
	DFSRecordsPending int `msgpack:"dfs_pending,omitempty"`
}

// Why a pending task has not been acknowledged yet (TaskProgress.State),
// the first that applies in this order.
const (
	// TaskHolderDown: the task's segment is not mounted, or its holder sent
	// no heartbeat within the holder TTL.
	TaskHolderDown = "holder_down"
	// TaskWithheld: an older incarnation of the key still has a pending
	// task; this one is handed out only after it (invariant 7).
	TaskWithheld = "withheld"
	// TaskLeased: the task's incarnation is under a read lease (a Get may
	// still be reading that copy); it is handed out once the lease ends,
	// TaskProgress.LeaseEnd.
	TaskLeased = "leased"
	// TaskRetrying: the last attempt failed (the holder reported an error,
	// or fetched it again without answering); it is retried with backoff.
	TaskRetrying = "retrying"
	// TaskPending: waiting for its holder's next fetch or ack.
	TaskPending = "pending"
)

// TaskProgress is the leader's view of one pending task. Attempts,
// LastError and LastGiven are the leader's soft state: they count from
// when it became leader, and a new leader starts them again.
type TaskProgress struct {
	State     string `msgpack:"state"`
	Holder    string `msgpack:"holder,omitempty"` // the segment's mount endpoint
	Attempts  int    `msgpack:"attempts,omitempty"`
	LastError string `msgpack:"err,omitempty"`
	LastGiven int64  `msgpack:"given,omitempty"` // unix nanoseconds, leader's clock
	// LeaseEnd is when the read lease that withholds the task ends (unix
	// nanoseconds, leader's clock); set with State TaskLeased only.
	LeaseEnd int64 `msgpack:"lease_end,omitempty"`
}

// ListSegmentsResponse lists every segment the master knows.
type ListSegmentsResponse struct {
	Segments []SegmentInfo `msgpack:"segments"`
	// Refused are the mounts the leader refused because their holder is a
	// late holder of a rebuilt cluster's lost cluster (leader soft state).
	Refused []RefusedMount `msgpack:"refused,omitempty"`
}

// RefusedMount is a holder whose mount the leader refused with
// SEGMENT_NEEDS_ADOPTION: the operator adopts it (a rebuild rerun that
// scans it) or retires it.
type RefusedMount struct {
	Segment  SegmentID `msgpack:"seg" json:"segment"`
	Endpoint string    `msgpack:"ep" json:"endpoint"`
	Pool     string    `msgpack:"pool" json:"pool"`
	ClientID string    `msgpack:"client" json:"client_id"`
	// MarkerCluster is the cluster the holder's marker names; nil when the
	// holder did not say (an older build).
	MarkerCluster *uint64 `msgpack:"marker,omitempty" json:"marker_cluster,omitempty"`
	Reason        string  `msgpack:"reason" json:"reason"`
	// LastAttempt is the last refused attempt (unix nanoseconds).
	LastAttempt int64 `msgpack:"last" json:"last_attempt_unix_nano"`
	Attempts    int   `msgpack:"attempts" json:"attempts"`
}

// StatusResponse is a master node's view of itself and the cluster.
type StatusResponse struct {
	NodeID       string `msgpack:"id" json:"id"`
	RaftState    string `msgpack:"state" json:"state"`
	Leader       string `msgpack:"leader" json:"leader"`
	LeaderRPC    string `msgpack:"leader_rpc" json:"leader_rpc"`
	Term         uint64 `msgpack:"term" json:"term"`
	CommitIndex  uint64 `msgpack:"commit" json:"commit_index"`
	AppliedIndex uint64 `msgpack:"applied" json:"applied_index"`
	ClusterID    uint64 `msgpack:"cluster" json:"cluster_id"`
	MasterEpoch  uint64 `msgpack:"master_epoch" json:"master_epoch"`
	Objects      int    `msgpack:"objects" json:"objects"`
	Segments     int    `msgpack:"segments" json:"segments"`
	PendingTasks int    `msgpack:"tasks" json:"pending_tasks"`
	RegistryCap  int    `msgpack:"registry_cap" json:"registry_capacity"`
	// LogStoreCannotWrite: a write to this node's Raft log store failed
	// (a full data dir, most often) and none has worked since; the node
	// does not campaign meanwhile. LogStoreError is the last failure.
	LogStoreCannotWrite bool   `msgpack:"log_store_cannot_write" json:"log_store_cannot_write"`
	LogStoreError       string `msgpack:"log_store_error,omitempty" json:"log_store_error,omitempty"`
	// DataDirFreeBytes is statfs of the data dir: bytes an unprivileged
	// writer may still use (-1: statfs failed).
	DataDirFreeBytes int64 `msgpack:"data_dir_free_bytes" json:"data_dir_free_bytes"`
	// Rebuild is the state of a rebuild of a lost cluster; nil for a
	// cluster that was never rebuilt.
	Rebuild *RebuildStatus `msgpack:"rebuild,omitempty" json:"rebuild,omitempty"`
	// RefusedMounts are the late holders the leader refused (leader only).
	RefusedMounts []RefusedMount `msgpack:"refused_mounts,omitempty" json:"refused_mounts,omitempty"`
	// Build is the answering node's build; nil from a build that does not
	// say.
	Build *BuildInfo `msgpack:"build,omitempty" json:"build,omitempty"`
}

// BuildInfo names a build of sexton (sexton version).
type BuildInfo struct {
	Version   string `msgpack:"version" json:"version"`
	Commit    string `msgpack:"commit" json:"commit"`
	Modified  bool   `msgpack:"modified,omitempty" json:"modified,omitempty"`
	GoVersion string `msgpack:"go" json:"go_version"`
	Date      string `msgpack:"date,omitempty" json:"date,omitempty"`
}

// RaftPeer is one member of the Raft configuration.
type RaftPeer struct {
	ID       string `msgpack:"id" json:"id"`
	Address  string `msgpack:"addr" json:"address"`
	Suffrage string `msgpack:"suffrage" json:"suffrage"`
	Leader   bool   `msgpack:"leader" json:"leader"`
}

// RaftPeersResponse lists the Raft configuration.
type RaftPeersResponse struct {
	Peers []RaftPeer `msgpack:"peers" json:"peers"`
}

// RaftPeerRequest names a peer to add, remove or transfer leadership to.
type RaftPeerRequest struct {
	ID      string `msgpack:"id"`
	Address string `msgpack:"addr,omitempty"`
}

// SnapshotChunkRequest asks for the bytes of a saved snapshot from Offset.
// An empty ID starts a new save: the leader captures its state and answers
// with the ID that later chunks name.
type SnapshotChunkRequest struct {
	ID     string `msgpack:"id,omitempty"`
	Offset int64  `msgpack:"off"`
}

// SnapshotChunk is one piece of a snapshot stream, at most
// SnapshotChunkSize bytes.
type SnapshotChunk struct {
	ID     string `msgpack:"id"`
	Offset int64  `msgpack:"off"`
	Data   []byte `msgpack:"data"`
	Total  int64  `msgpack:"total"`
	EOF    bool   `msgpack:"eof"`
	// AllowRollback, on a restore's last chunk, lets the leader install a
	// file whose index is below its applied index: the removes and puts
	// made after the file's index are undone. Without it such a restore
	// is refused.
	AllowRollback bool `msgpack:"allow_rollback,omitempty"`
}

// SnapshotChunkSize bounds one chunk of a snapshot transfer.
const SnapshotChunkSize = 1 << 20

// SnapshotRestoreResponse reports a completed restore.
type SnapshotRestoreResponse struct {
	Format      string `msgpack:"format"`
	Objects     int    `msgpack:"objects"`
	Segments    int    `msgpack:"segments"`
	Tasks       int    `msgpack:"tasks"`
	MasterEpoch uint64 `msgpack:"master_epoch"`
}

// HolderWriteRequest stores an object under (Key, Incarnation). The holder
// accepts it only for a put the master has started for this segment.
type HolderWriteRequest struct {
	Key         string            `msgpack:"key"`
	Tenant      string            `msgpack:"tenant,omitempty"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
	// Grant is the leader's permission for this segment to store this
	// incarnation, from PutStart's answer. Required. It is encoded before
	// Value so a holder can check it before the value's bytes arrive.
	Grant *WriteGrant `msgpack:"grant,omitempty"`
	Value []byte      `msgpack:"value"`
}

// HolderReadRequest reads (Key, Incarnation).
type HolderReadRequest struct {
	Key         string            `msgpack:"key"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
}

// HolderReadResponse carries the value.
type HolderReadResponse struct {
	Value []byte `msgpack:"value"`
}

// HolderScanRequest pages through a holder's live (key, incarnation) set
// in order, strictly after After (the zero ref starts at the beginning).
type HolderScanRequest struct {
	After ObjectRef `msgpack:"after"`
	Limit int       `msgpack:"limit"`
}

// HolderScanResponse is one page; More says whether another follows.
type HolderScanResponse struct {
	Refs []ObjectRef `msgpack:"refs"`
	More bool        `msgpack:"more"`
}

// MaxRecordsPage bounds the records of one HolderListRecords page.
const MaxRecordsPage = 8192

// HolderListRecordsRequest pages through a holder's records in (key,
// incarnation) order, strictly after After (the zero ref starts at the
// beginning).
type HolderListRecordsRequest struct {
	After ObjectRef `msgpack:"after"`
	Limit int       `msgpack:"limit"`
}

// HolderRecord is one (key, incarnation) a holder keeps. A tombstoned
// record (or one its tombstone floor names) is dead on this holder: its
// size and checksum are zero when GC already reclaimed it. Evicted (only
// with Tombstoned) says the holder gave the copy up under disk pressure
// after the master dropped the replica: it is no evidence that the
// incarnation was removed. A holder that does not send it reports every
// dead record as removed, the safe reading.
type HolderRecord struct {
	Key         string            `msgpack:"k"`
	Tenant      string            `msgpack:"t,omitempty"`
	Incarnation ObjectIncarnation `msgpack:"i"`
	Size        int64             `msgpack:"s"`
	CRC32C      uint32            `msgpack:"c"`
	Tombstoned  bool              `msgpack:"x,omitempty"`
	Evicted     bool              `msgpack:"e,omitempty"`
}

// HolderListRecordsResponse is one page, with the holder's identity (its
// marker's segment and cluster ids, its pool and capabilities) on every
// page so a scan notices a holder replaced mid-way.
type HolderListRecordsResponse struct {
	Segment      SegmentID      `msgpack:"seg"`
	ClusterID    uint64         `msgpack:"cluster"`
	Pool         string         `msgpack:"pool"`
	Capabilities []Capability   `msgpack:"caps"`
	Records      []HolderRecord `msgpack:"recs"`
	More         bool           `msgpack:"more"`
	// KnownSegments are the segment ids of its cluster the holder last
	// heard of from a master (HeartbeatResponse.Segments), on the first
	// page only; nil from an older build or before the first heartbeat.
	KnownSegments []SegmentID `msgpack:"known_segs,omitempty"`
}

// HolderStatusResponse is a holder's view of its segment.
type HolderStatusResponse struct {
	Segment      SegmentID      `msgpack:"seg" json:"segment"`
	ClientID     string         `msgpack:"client" json:"client_id"`
	MountEpoch   uint64         `msgpack:"epoch" json:"mount_epoch"`
	MasterEpoch  uint64         `msgpack:"master_epoch" json:"master_epoch"`
	Mounted      bool           `msgpack:"mounted" json:"mounted"`
	UsedBytes    int64          `msgpack:"used" json:"used_bytes"`
	LiveBytes    int64          `msgpack:"live" json:"live_bytes"`
	DeadBytes    int64          `msgpack:"dead" json:"dead_bytes"`
	Capacity     int64          `msgpack:"cap" json:"capacity"`
	LiveObjects  int            `msgpack:"live_objects" json:"live_objects"`
	Tombstoned   int            `msgpack:"tombstoned" json:"tombstoned_objects"`
	Buckets      []BucketStatus `msgpack:"buckets" json:"buckets"`
	TasksDone    int64          `msgpack:"tasks_done" json:"tasks_done"`
	TasksRetried int64          `msgpack:"tasks_retried" json:"tasks_retried"`
	TasksStale   int64          `msgpack:"tasks_stale" json:"tasks_stale_version"`
	Reconciled   int64          `msgpack:"reconciled" json:"reconciled_tombstones"`
	GC           GCStatus       `msgpack:"gc" json:"gc"`
}

// BucketStatus describes one bucket of a holder.
type BucketStatus struct {
	ID        uint64  `msgpack:"id" json:"id"`
	DataSize  int64   `msgpack:"size" json:"data_size"`
	LiveBytes int64   `msgpack:"live" json:"live_bytes"`
	DeadBytes int64   `msgpack:"dead" json:"dead_bytes"`
	DeadRatio float64 `msgpack:"ratio" json:"dead_ratio"`
	LiveCount int     `msgpack:"live_n" json:"live_count"`
	DeadCount int     `msgpack:"dead_n" json:"dead_count"`
	Open      bool    `msgpack:"open" json:"open"`
}

// GCStatus reports a holder's bucket GC.
type GCStatus struct {
	Enabled        bool   `msgpack:"enabled" json:"enabled"`
	Rounds         int64  `msgpack:"rounds" json:"rounds"`
	BytesReclaimed int64  `msgpack:"reclaimed" json:"bytes_reclaimed"`
	BytesCopied    int64  `msgpack:"copied" json:"bytes_copied"`
	BucketsEvicted int64  `msgpack:"evicted" json:"buckets_evicted"`
	LastError      string `msgpack:"last_err,omitempty" json:"last_error,omitempty"`
	// Zero from a holder without the GC worker.
	BucketsUnlinked int64 `msgpack:"unlinked,omitempty" json:"buckets_unlinked"`
	BucketsMerged   int64 `msgpack:"merged,omitempty" json:"buckets_merged"`
	CleanupPending  bool  `msgpack:"cleanup_pending,omitempty" json:"cleanup_pending"`
}

// EvictRequest asks the master to drop a segment's replicas of live
// objects before the holder frees their bytes (above its high watermark,
// with no dead bytes left to reclaim).
type EvictRequest struct {
	Segment    SegmentID   `msgpack:"seg"`
	MountEpoch uint64      `msgpack:"epoch"`
	Refs       []ObjectRef `msgpack:"refs"`
}

// EvictResponse names the refs the master dropped; only those may be
// freed. The rest are under a read lease, not the current copy, or the
// newest copy of a key whose older copies still await deletion.
type EvictResponse struct {
	Evicted []ObjectRef `msgpack:"evicted"`
}

// SettingsSetRequest changes some settings.
type SettingsSetRequest struct {
	Settings Settings `msgpack:"settings"`
	Session  Session  `msgpack:"sess,omitempty"`
}

// SettingsResponse shows the replicated settings as of Index.
type SettingsResponse struct {
	Settings Settings `msgpack:"settings" json:"settings"`
	Index    uint64   `msgpack:"index" json:"index"`
}
