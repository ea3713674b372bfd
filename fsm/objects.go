package fsm

import (
	"maps"

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
type object struct {
	tenant   string // interned
	putID    string
	size     int64
	created  int64
	inc      api.ObjectIncarnation
	replicas []api.ReplicaDescriptor // interned for DFS-free lists; never mutated
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

// objectTable is the key → entry map, split in shards by key hash.
type objectTable struct {
	shards   [numShards]shard
	complete int // keys with a COMPLETE incarnation
	pending  int // keys with a PENDING incarnation
}

func newObjectTable() *objectTable { return &objectTable{} }

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
	t.complete += countNonNil(e.complete) - countNonNil(old.complete)
	t.pending += countNonNil(e.pending) - countNonNil(old.pending)
	if e.empty() {
		delete(s.m, key)
		return
	}
	s.m[key] = e
}

func countNonNil(o *object) int {
	if o == nil {
		return 0
	}
	return 1
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
