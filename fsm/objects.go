package fsm

import (
	"maps"
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

// shard is one copy-on-write slice of the object table. shared says a
// snapshot view holds m, so the next write must clone it first.
type shard struct {
	m      map[string]entry
	shared bool
}

// objectTable is the key → entry map, split in shards by key hash, with
// two ordered indexes that set keeps in step with it:
//
//   - completeKeys: every key with a COMPLETE incarnation, in key order, so
//     a List page or a job's next keys cost O(log n + page) instead of a
//     scan of every shard. Its items are the map's own key strings (set
//     re-inserts the caller's key whenever it stores an entry with a
//     COMPLETE incarnation, because a Go map replaces a string key on every
//     assignment), so the index costs a string header, not a copy of the
//     key's bytes.
//   - pendingPuts: (created, key) of every PENDING incarnation, so the
//     leader finds stale puts without a scan. Puts in flight are few next
//     to the objects.
//
// Only the live state has them: a snapshot view shares the shard maps and
// sorts its own keys, so the indexes need no copy-on-write.
type objectTable struct {
	shards       [numShards]shard
	completeKeys *btree.BTreeG[string]
	pendingPuts  *btree.BTreeG[pendingRef]
}

// indexDegree is the B-tree degree of the indexes: nodes of up to 127
// strings (2 KiB). Measured on 1 M keys, degree 64 costs ~24 B per key
// inserted in random order (degree 32: ~28 B) at the same speed.
const indexDegree = 64

// pendingRef names one PENDING incarnation in the pendingPuts index.
type pendingRef struct {
	created int64
	key     string
}

func (a pendingRef) less(b pendingRef) bool {
	if a.created != b.created {
		return a.created < b.created
	}
	return a.key < b.key
}

func newObjectTable() *objectTable {
	return &objectTable{
		completeKeys: btree.NewG(indexDegree, func(a, b string) bool { return a < b }),
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
	switch {
	case s.m == nil:
		s.m = make(map[string]entry)
	case s.shared:
		s.m = maps.Clone(s.m)
	}
	s.shared = false
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
// must hold that same string, not an older copy of its bytes.
func (t *objectTable) index(key string, old, e entry) {
	switch {
	case e.complete != nil:
		t.completeKeys.ReplaceOrInsert(key)
	case old.complete != nil:
		t.completeKeys.Delete(key)
	}
	if old.pending != nil && (e.pending == nil || e.pending.created != old.pending.created) {
		t.pendingPuts.Delete(pendingRef{old.pending.created, key})
	}
	if e.pending != nil && (old.pending == nil || e.pending.created != old.pending.created) {
		t.pendingPuts.ReplaceOrInsert(pendingRef{e.pending.created, key})
	}
}

// ascendComplete calls fn with every key that has a COMPLETE incarnation,
// is under prefix and sorts after after, in key order, until fn returns
// false. It costs O(log n) plus the keys visited: the keys under a prefix
// are one contiguous run of the index.
func (t *objectTable) ascendComplete(prefix, after string, fn func(key string) bool) {
	t.completeKeys.AscendGreaterOrEqual(max(prefix, after), func(k string) bool {
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

// share marks every shard shared and returns their maps, for a snapshot
// view. Cost: numShards pointer copies, independent of the object count.
func (t *objectTable) share() []map[string]entry {
	out := make([]map[string]entry, numShards)
	for i := range t.shards {
		t.shards[i].shared = true
		out[i] = t.shards[i].m
	}
	return out
}
