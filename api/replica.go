package api

import "sexton/internal/enum"

// ReplicaKind says where a replica's bytes live.
type ReplicaKind uint8

const (
	// ReplicaLocalDisk is a copy in a holder's LOCAL_DISK bucket store.
	ReplicaLocalDisk ReplicaKind = 1
	// ReplicaDFS is a copy in a file on the shared DFS root.
	ReplicaDFS ReplicaKind = 2
)

var replicaKindNames = []string{ReplicaLocalDisk: "LOCAL_DISK", ReplicaDFS: "DFS"}

func (k ReplicaKind) String() string { return enum.Name(replicaKindNames, k, "UNKNOWN") }

// ReplicaDescriptor says where one copy of an object is. For LOCAL_DISK it
// names the segment (and the pool it belongs to); the holder's data address
// is looked up from the segment's mount at read time, so a holder that
// remounts on another address keeps its replicas. For DFS it carries the
// allocator's descriptor.
type ReplicaDescriptor struct {
	Kind    ReplicaKind    `msgpack:"kind"`
	Segment SegmentID      `msgpack:"seg,omitempty"`
	Pool    string         `msgpack:"pool,omitempty"`
	DFS     *DFSDescriptor `msgpack:"dfs,omitempty"`
}

// DFSDescriptor locates a DFS replica: the file below the DFS root, the
// allocator unit (bucket or shard) it belongs to, and the byte range.
type DFSDescriptor struct {
	Allocator   string `msgpack:"alloc"` // "shard" or "bucket"
	Path        string `msgpack:"path"`  // relative to the DFS root
	UnitID      uint64 `msgpack:"unit"`  // bucket id or shard number
	Offset      int64  `msgpack:"off"`
	Size        int64  `msgpack:"size"`
	AlignedSize int64  `msgpack:"asize"`
}

// ReplicaLocation is a replica as handed to a client: the descriptor plus the
// data address of the holder that serves it (empty for DFS).
type ReplicaLocation struct {
	ReplicaDescriptor `msgpack:",inline"`
	Endpoint          string `msgpack:"ep,omitempty"`
	// Grant lets the holder accept this replica's bytes; only in the
	// answers of PutStart and BatchPutStart, for LOCAL_DISK replicas.
	Grant *WriteGrant `msgpack:"grant,omitempty"`
}
