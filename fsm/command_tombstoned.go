package fsm

import "sexton/api"

// CmdDropTombstoned drops replicas their holder reports tombstoned.
const CmdDropTombstoned CommandType = 25

// DropTombstonedV1 is DropTombstoned's current schema version.
const DropTombstonedV1 uint8 = 1

// DropTombstoned removes one segment's replicas of the named COMPLETE
// incarnations because the segment's holder reported each of them
// tombstoned (by record or by its key's tombstone floor): the table lists
// a copy that can never be read again, which happens after a snapshot
// restore rolled back the removes that tombstoned it. Each ref is
// conditional on its incarnation: a key whose COMPLETE incarnation is not
// the named one (a newer put replaced it) is left alone. An object left
// with no replica is gone; no delete task is created, the bytes are dead
// on the holder already. Its body is DropReplicas': a segment's refs
// under the holder's mount epoch.
type DropTombstoned DropReplicas

func boundsDropTombstoned(c *DropTombstoned, b bounder) error {
	return boundsDropReplicas((*DropReplicas)(c), b)
}

// DropTombstonedResult answers DropTombstoned: the refs whose replica on
// the segment was dropped, in request order, and how many of their
// objects were left with no replica and so left the table.
type DropTombstonedResult struct {
	Err     *api.Error
	Dropped []api.ObjectRef
	Objects int
}
