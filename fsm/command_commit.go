package fsm

import (
	"time"

	"sexton/api"
)

// The one-commit put's commands (docs/DESIGN.md §8 "One-commit puts").
const (
	CmdReserveIncarnations CommandType = 28
	CmdPutCommit           CommandType = 29
	CmdPutCommitBatch      CommandType = 30
)

// Their current schema versions.
const (
	ReserveIncarnationsV1 uint8 = 1
	PutCommitV1           uint8 = 1
	PutCommitBatchV1      uint8 = 1
)

// Bounds of the reserved incarnation blocks.
const (
	// MaxIncBlocks bounds the live blocks: a leader keeps one or two, so
	// more means many leader changes within a block's life.
	MaxIncBlocks = 64
	// MaxIncBlockCount bounds one block's incarnations.
	MaxIncBlockCount = 1 << 20
	// MaxIncBlockLife bounds how long after its reservation a block
	// lives: reconcile leaves its uncommitted incarnations alone until it
	// expires, and a block never outlives the longest write grant a
	// holder accepts.
	MaxIncBlockLife = int64(10 * time.Minute)
)

// ReserveIncarnations reserves a block of Count incarnations for the
// leader to hand out without a commit until Expires (the leader's clock).
// Count 0 reserves nothing: it only carries the leader's time, which
// expires the blocks whose Expires it passed.
type ReserveIncarnations struct {
	V       uint8  `msgpack:"v"`
	Count   uint64 `msgpack:"count"`
	Expires int64  `msgpack:"expires"`
	Now     int64  `msgpack:"now"`
}

// PutCommit makes a LOCAL_DISK put whose bytes are written the key's
// COMPLETE incarnation in one entry: PutStart and PutEnd together, with
// the incarnation taken from a reserved block. Its body is a
// PutCommitItem's fields between V and Session (the encoder inlines the
// embedded item, so the entry is the same map as with the fields listed).
type PutCommit struct {
	V uint8 `msgpack:"v"`
	PutCommitItem
	Session api.Session `msgpack:"sess,omitempty"`
	Now     int64       `msgpack:"now"`
}

// PutCommitItem is one put of a PutCommitBatch, and a PutCommit's body.
type PutCommitItem struct {
	Key         string                  `msgpack:"key"`
	Incarnation api.ObjectIncarnation   `msgpack:"inc"`
	Tenant      string                  `msgpack:"tenant"`
	Size        int64                   `msgpack:"size"`
	Replicas    []api.ReplicaDescriptor `msgpack:"replicas"`
	PutID       string                  `msgpack:"put_id"`
	IfAbsent    bool                    `msgpack:"if_absent"`
}

// PutCommitBatch commits many one-commit puts in one entry, each exactly
// as a PutCommit, in order; a key named twice refuses the whole batch.
type PutCommitBatch PutBatch[PutCommitItem]

func boundsPutCommitBatch(c *PutCommitBatch, b bounder) error {
	return boundsBatch(b, c.Session, c.Items, func(it PutCommitItem) error {
		return putStartBounded(b, it.Key, it.Tenant, it.PutID, it.Replicas)
	})
}

func boundsPutCommit(c *PutCommit, b bounder) error {
	return firstErr(b.session(c.Session), putStartBounded(b, c.Key, c.Tenant, c.PutID, c.Replicas))
}

// ReserveResult answers ReserveIncarnations: the block [Lo, Hi] of cluster
// Cluster's incarnations, live until Expires. Count 0 answers an empty
// block (Lo > Hi).
type ReserveResult struct {
	Err     *api.Error
	Cluster uint64
	Lo, Hi  uint64
	Expires int64
}
