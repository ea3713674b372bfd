package fsm

import "sexton/api"

// Batch put command types: many PutStarts (or PutEnds) in one Raft entry,
// so a client putting many objects pays one consensus round, and the DFS
// space of a PutStartBatch is allocated as one atomic allocator batch.
const (
	CmdPutStartBatch CommandType = 17
	CmdPutEndBatch   CommandType = 18
)

const (
	PutStartBatchV1 uint8 = 1
	PutEndBatchV1   uint8 = 1
	// Version 2 carries the client's session (api.Session).
	PutStartBatchV2 uint8 = 2
	PutEndBatchV2   uint8 = 2
)

// MaxBatchPutItems bounds the items of one PutStartBatch or PutEndBatch.
// Far below api.MaxBatchKeys: every item of a PutStartBatch carries its
// replicas, and one entry must stay small enough to replicate quickly.
const MaxBatchPutItems = api.MaxBatchPutItems

// PutStartItem is one object of a PutStartBatch, and a PutStart's body.
type PutStartItem struct {
	Key      string                  `msgpack:"key"`
	Tenant   string                  `msgpack:"tenant"`
	Size     int64                   `msgpack:"size"`
	Replicas []api.ReplicaDescriptor `msgpack:"replicas"`
	PutID    string                  `msgpack:"put_id"`
	IfAbsent bool                    `msgpack:"if_absent"`
}

// PutBatch is the body of the batch put commands (PutStartBatch,
// PutEndBatch, PutCommitBatch): their items in order, under the client's
// one session for the whole batch (v2 of PutStartBatch and PutEndBatch;
// every PutCommitBatch), at the leader's time.
type PutBatch[T any] struct {
	V       uint8       `msgpack:"v"`
	Items   []T         `msgpack:"items"`
	Session api.Session `msgpack:"sess,omitempty"`
	Now     int64       `msgpack:"now"`
}

// PutStartBatch starts many puts in one entry. Every item that starts gets
// the incarnation {cluster id, this entry's index}: an incarnation must be
// unique and ordered per key only, and a batch holds each key at most once
// (a batch naming a key twice is refused whole, INVALID_PARAMS).
type PutStartBatch PutBatch[PutStartItem]

// PutEndItem is one PutEnd of a PutEndBatch.
type PutEndItem struct {
	Key         string                `msgpack:"key"`
	Incarnation api.ObjectIncarnation `msgpack:"inc"`
}

// PutEndBatch completes many pending puts in one entry, each exactly as a
// PutEnd of its own, in item order.
type PutEndBatch PutBatch[PutEndItem]

// PutStartBatchResult answers PutStartBatch: Err refuses the whole batch
// (nothing changed); otherwise Items has one result per item, in order.
type PutStartBatchResult struct {
	Err   *api.Error
	Items []PutStartResult
	// Duplicate: answered from the session table, nothing executed.
	Duplicate bool
}

// PutEndBatchResult answers PutEndBatch with one result per item, in order.
type PutEndBatchResult struct {
	Err       *api.Error
	Items     []PutEndResult
	Duplicate bool // answered from the session table, nothing executed
}

// DuplicateBatchKey returns the first key named twice in keys, if any; the
// leader uses it to refuse a batch before proposing, Apply to refuse it.
func DuplicateBatchKey(n int, key func(int) string) (string, bool) {
	seen := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		k := key(i)
		if _, dup := seen[k]; dup {
			return k, true
		}
		seen[k] = struct{}{}
	}
	return "", false
}
