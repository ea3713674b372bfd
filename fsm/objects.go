package fsm

import (
	"strings"

	"github.com/google/btree"

	"sexton/api"
)

// numShards splits the object table so that the first write to a shard after
// a snapshot copies only that shard (about 1/numShards of the objects: ~250
// entries at a million objects). Shard maps are allocated on first write, so
// a small FSM does not pay for thousands of empty maps.
const numShards = 4096

// object is one incarnation of one key. It is immutable once stored: a
// change builds a new object and replaces the pointer, so a snapshot view
// that captured the old shard map keeps seeing the old value.
//
// It is kept to 48 bytes, the smallest size class that holds it (there is
// one per incarnation, millions of them): what many objects have in common
// sits behind attrs, and the put id, which most puts do not have, behind a
// pointer that is nil for them. TestObjectStaysPacked holds it there.
type object struct {
	inc     api.ObjectIncarnation
	size    int64
	created int64
	attrs   *objectAttrs
	// putIDRef is nil for a put without a put id. A pointer rather than a
	// string, so an object without one does not pay a 16-byte header
	// (which would take it to the 64-byte class), and rather than a field
	// of attrs, so an object with one costs 16 bytes more, not an
	// unshared attrs of its own (64 bytes).
	putIDRef *string
}

// objectAttrs is the part of an object that many objects share: a tenant
// and a placement. Immutable: a replica change gives the object another
// attrs (state.withReplicas). Those with a DFS-free replica list are
// interned (state.internAttrs), so a million 1-replica objects of one
// tenant on one segment point to one of them.
type objectAttrs struct {
	tenant   string                  // interned
	replicas []api.ReplicaDescriptor // never mutated
}

func (o *object) tenant() string                    { return o.attrs.tenant }
func (o *object) replicas() []api.ReplicaDescriptor { return o.attrs.replicas }

func (o *object) putID() string {
	if o.putIDRef == nil {
		return ""
	}
	return *o.putIDRef
}

// entry is what a key maps to: its visible (COMPLETE) incarnation, the put
// in progress (PENDING), and the head of the list (via task.keyNext) of its
// pending delete tasks; any of them may be nil, and a key stays in the table
// while any is set. Keeping the task list here means a Remove finds the
// key's object and its tasks in one lookup. Stored by value so a key costs
// no extra allocation.
type entry struct {
	complete *object
	pending  *object
	tasks    *task
}

func (e entry) empty() bool { return e.complete == nil && e.pending == nil && e.tasks == nil }

// shard is one slice of the object table.
type shard struct {
	m map[string]entry
}

// objectTable is the key → entry map, split in shards by key hash, with
// two ordered indexes that set keeps in step with it:
//
//   - completeKeys: every key with a COMPLETE incarnation, in key order,
//     with that incarnation, so a List page or a job's next keys cost
//     O(log n + page) instead of a scan of every shard. Its keys are the
//     map's own key strings (set re-inserts the caller's key whenever it
//     stores an entry with a COMPLETE incarnation, because a Go map
//     replaces a string key on every assignment), so the index costs a
//     string header and a pointer, not a copy of the key's bytes.
//   - pendingPuts: (created, key) of every PENDING incarnation, with that
//     incarnation, so the leader finds stale puts without a scan. Puts in
//     flight are few next to the objects.
//
// Together the indexes hold every incarnation the table holds, which is
// what a snapshot writes: a snapshot view takes lazy copy-on-write clones
// of them (btree's Clone: O(1); a node is copied on its first write
// after) and walks them in key order beside Apply. So the maps are never
// shared and never cloned, the snapshot sorts no more than the puts in
// flight, and its memory is the index nodes written while it runs.
type objectTable struct {
	shards       [numShards]shard
	completeKeys *btree.BTreeG[completeRef]
	pendingPuts  *btree.BTreeG[pendingRef]
}

// indexDegree is the B-tree degree of the indexes: nodes of up to 63
// items. It bounds what the first write to a node after a snapshot copies
// (1.5 KiB of completeRefs). BenchmarkHeapPerObject (200 k keys in
// order): degree 64 costs 2 B per object less and copies twice as much.
const indexDegree = 32

// completeRef is one key's COMPLETE incarnation in the completeKeys index.
type completeRef struct {
	key string
	obj *object
}

func (a completeRef) less(b completeRef) bool { return a.key < b.key }

// pendingRef is one PENDING incarnation in the pendingPuts index, ordered
// by (created, key).
type pendingRef struct {
	created int64
	key     string
	obj     *object
}

func (a pendingRef) less(b pendingRef) bool {
	if a.created != b.created {
		return a.created < b.created
	}
	return a.key < b.key
}

func newObjectTable() *objectTable {
	return &objectTable{
		completeKeys: btree.NewG(indexDegree, completeRef.less),
		pendingPuts:  btree.NewG(indexDegree, pendingRef.less),
	}
}

// completeCount is the number of keys with a COMPLETE incarnation.
func (t *objectTable) completeCount() int { return t.completeKeys.Len() }

// pendingCount is the number of keys with a PENDING incarnation.
func (t *objectTable) pendingCount() int { return t.pendingPuts.Len() }

// shardOf is FNV-1a; the shard never reaches a result, only where a key is
// kept, so any fixed hash will do.
func shardOf(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h % numShards)
}

func (t *objectTable) get(key string) entry {
	return t.shards[shardOf(key)].m[key]
}

// set replaces old (what get returned for key, unchanged since) with e,
// deleting the key when e is empty, and clones the shard first if a
// snapshot view shares it. Passing old saves a second lookup.
func (t *objectTable) set(key string, old, e entry) {
	s := &t.shards[shardOf(key)]
	if old.empty() && e.empty() {
		return
	}
	if s.m == nil {
		s.m = make(map[string]entry)
	}
	t.index(key, old, e)
	if e.empty() {
		delete(s.m, key)
		return
	}
	s.m[key] = e
}

// index updates completeKeys and pendingPuts for key going from old to e.
// A key that keeps its COMPLETE incarnation is re-inserted anyway: the map
// assignment that follows makes key's string the map's, and the index
// must hold that same string, not an older copy of its bytes. A PENDING
// incarnation is re-inserted whenever it changes, even with the same
// creation time (a replica list changed), as the index carries it.
func (t *objectTable) index(key string, old, e entry) {
	switch {
	case e.complete != nil:
		t.completeKeys.ReplaceOrInsert(completeRef{key, e.complete})
	case old.complete != nil:
		t.completeKeys.Delete(completeRef{key: key})
	}
	if old.pending != nil && (e.pending == nil || e.pending.created != old.pending.created) {
		t.pendingPuts.Delete(pendingRef{created: old.pending.created, key: key})
	}
	if e.pending != nil && e.pending != old.pending {
		t.pendingPuts.ReplaceOrInsert(pendingRef{e.pending.created, key, e.pending})
	}
}

// ascendComplete calls fn with every key that has a COMPLETE incarnation,
// is under prefix and sorts after after, in key order, until fn returns
// false. It costs O(log n) plus the keys visited: the keys under a prefix
// are one contiguous run of the index.
func (t *objectTable) ascendComplete(prefix, after string, fn func(key string) bool) {
	t.completeKeys.AscendGreaterOrEqual(completeRef{key: max(prefix, after)}, func(r completeRef) bool {
		k := r.key
		if k == after {
			return true
		}
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		return fn(k)
	})
}

// ascendPending calls fn with every PENDING incarnation's (created, key)
// created before createdBefore, oldest first (ties by key), until fn
// returns false.
func (t *objectTable) ascendPending(createdBefore int64, fn func(pendingRef) bool) {
	t.pendingPuts.Ascend(func(p pendingRef) bool {
		return p.created < createdBefore && fn(p)
	})
}

// clone returns lazy copy-on-write clones of the two indexes, for a
// snapshot view: they hold every incarnation the table holds now, and
// can be read on another goroutine while Apply goes on. Cost: two btree
// clones, independent of the object count.
func (t *objectTable) clone() (*btree.BTreeG[completeRef], *btree.BTreeG[pendingRef]) {
	return t.completeKeys.Clone(), t.pendingPuts.Clone()
}
