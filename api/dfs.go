package api

// Methods of the master RPC for DFS replicas (docs/DESIGN.md §9).
const (
	MethodDFSConfig        = "DFSConfig"
	MethodDFSStatus        = "DFSStatus"
	MethodDFSSetMaxBuckets = "DFSSetMaxBuckets"
)

// DFSConfigResponse publishes the master's DFS settings, so a client can
// refuse DFS I/O under different ones (CodeDFSMismatch). Env is the
// cluster's replicated allocator configuration as MOONCAKE_DFS_*=value
// lines, sorted; Root and Adapter are the answering master's.
type DFSConfigResponse struct {
	Enabled bool     `msgpack:"enabled" json:"enabled"`
	Root    string   `msgpack:"root" json:"root"`
	Adapter string   `msgpack:"adapter" json:"adapter"`
	Env     []string `msgpack:"env" json:"env"`
}

// DFSUnitStatus is one bucket or shard in a DFSStatusResponse.
type DFSUnitStatus struct {
	Unit           uint64 `msgpack:"unit" json:"unit"`
	Path           string `msgpack:"path" json:"path"`
	State          string `msgpack:"state" json:"state"`
	File           string `msgpack:"file" json:"file"`
	Capacity       int64  `msgpack:"cap" json:"capacity"`
	Used           int64  `msgpack:"used" json:"used"`
	LiveBytes      int64  `msgpack:"live" json:"live_bytes"`
	DeadBytes      int64  `msgpack:"dead" json:"dead_bytes"`
	Entries        int    `msgpack:"entries" json:"entries"`
	PendingEntries int    `msgpack:"pending" json:"pending_entries"`
	DeleteFailures uint32 `msgpack:"del_failures" json:"delete_failures"`
}

// DFSStatusResponse answers `sexton operator dfs status`. DeadBytes are
// tombstoned (bucket) or deferred (shard) bytes.
type DFSStatusResponse struct {
	DFSConfigResponse `msgpack:",inline"`
	Allocator         string          `msgpack:"alloc" json:"allocator"`
	Capacity          int64           `msgpack:"cap" json:"capacity"`
	Used              int64           `msgpack:"used" json:"used"`
	LiveBytes         int64           `msgpack:"live" json:"live_bytes"`
	DeadBytes         int64           `msgpack:"dead" json:"dead_bytes"`
	Entries           int             `msgpack:"entries" json:"entries"`
	MaxBuckets        int             `msgpack:"max_buckets" json:"max_buckets"`
	ChargedBuckets    int             `msgpack:"charged" json:"charged_buckets"`
	PendingDeletions  int             `msgpack:"pending_deletions" json:"pending_deletions"`
	NextBucketID      uint64          `msgpack:"next_bucket" json:"next_bucket_id"`
	Evicted           uint64          `msgpack:"evicted" json:"evicted"`
	Aborted           uint64          `msgpack:"aborted" json:"aborted"`
	Lost              uint64          `msgpack:"lost" json:"lost"`
	Units             []DFSUnitStatus `msgpack:"units" json:"units"`
	// StrayFiles are files below the root the state does not know, with
	// the unix nanos they were first seen; removed after a grace period.
	StrayFiles []string `msgpack:"strays" json:"stray_files"`
}

// DFSSetMaxBucketsRequest changes the bucket allocator's maximum.
type DFSSetMaxBucketsRequest struct {
	Max int `msgpack:"max"`
}
