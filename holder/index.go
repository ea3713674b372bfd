package holder

import (
	"sexton/api"
)

// objectKey names one incarnation of one key. The tenant is not part of
// it: an incarnation is unique across the cluster, so (key, incarnation)
// already names exactly one object.
type objectKey struct {
	key string
	inc api.ObjectIncarnation
}

// location is where a live record lives: its bucket, its slot in the
// bucket's metadata, and the byte range and checksum of its value.
type location struct {
	bucket uint64
	slot   int
	offset int64
	size   int64
	crc    uint32
}

// index is the in-memory view rebuilt from .meta files. live holds what
// reads may return; dead holds incarnations whose record is tombstoned (or
// shadowed by a tombstone elsewhere) and still present in some metadata, so
// a replayed task answers AlreadyRemoved and a Put cannot revive it.
//
// Both maps are only touched under Store.mu, so a later GC can switch
// records to a replacement bucket atomically with respect to readers.
type index struct {
	live map[objectKey]location
	dead map[objectKey]uint64 // → bucket id holding the tombstone
	// evicted holds the dead incarnations every tombstone of which is an
	// eviction (a subset of dead's keys): what Records reports as evicted.
	evicted map[objectKey]struct{}
}

func newIndex() index {
	return index{live: make(map[objectKey]location), dead: make(map[objectKey]uint64), evicted: make(map[objectKey]struct{})}
}

// markDead records a tombstone of k in bucket id; evicted says how it
// died. A removal anywhere outweighs any number of evictions.
func (idx *index) markDead(k objectKey, id uint64, evicted bool) {
	_, wasDead := idx.dead[k]
	_, wasEvicted := idx.evicted[k]
	idx.dead[k] = id
	if evicted && (!wasDead || wasEvicted) {
		idx.evicted[k] = struct{}{}
	} else {
		delete(idx.evicted, k)
	}
}

// forget drops k's tombstone, reclaimed with its bytes.
func (idx *index) forget(k objectKey) {
	delete(idx.dead, k)
	delete(idx.evicted, k)
}

// recordState is what loading decided for one metadata slot.
type recordState uint8

const (
	stateLive recordState = iota
	stateTombstoned
	stateShadowed // a live duplicate of a record that is live or dead elsewhere
)

// buildIndex rebuilds the index from every bucket's committed metadata,
// visited in ascending id order. A tombstone anywhere wins over a live copy
// anywhere (no resurrection); of two live copies the higher bucket id wins,
// because a GC target is always newer than its sources. A live record at
// exactly its key's tombstone floor is dead too (the floor recorded its
// tombstone); one below the floor is not: an older complete incarnation
// stays live when a newer put of the key is revoked. It returns the state
// of every slot, keyed by bucket id.
func buildIndex(metas map[uint64]*BucketMetadata, ids []uint64, floors map[string]floorEntry) (index, map[uint64][]recordState, int) {
	idx := newIndex()
	states := make(map[uint64][]recordState, len(ids))
	for _, id := range ids {
		m := metas[id]
		for i := range m.Objects {
			o := &m.Objects[i]
			if o.Tombstoned {
				idx.markDead(objectKey{o.Key, o.Incarnation}, id, o.Evicted)
			}
		}
		states[id] = make([]recordState, len(m.Objects))
	}
	shadowed := 0
	for _, id := range ids {
		m := metas[id]
		st := states[id]
		for i := range m.Objects {
			o := &m.Objects[i]
			k := objectKey{o.Key, o.Incarnation}
			switch {
			case o.Tombstoned:
				st[i] = stateTombstoned
			case idx.dead[k] != 0 || atFloor(floors, k):
				st[i] = stateShadowed
				shadowed++
			default:
				if prev, ok := idx.live[k]; ok {
					states[prev.bucket][prev.slot] = stateShadowed
					shadowed++
				}
				idx.live[k] = location{bucket: id, slot: i, offset: o.Offset, size: o.Size, crc: o.CRC32C}
			}
		}
	}
	return idx, states, shadowed
}

// atFloor reports whether k is exactly the incarnation its key's floor
// recorded as tombstoned.
func atFloor(floors map[string]floorEntry, k objectKey) bool {
	f, ok := floors[k.key]
	return ok && f.inc == k.inc
}
