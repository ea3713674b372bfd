package fsm

import (
	"strings"

	"sexton/fsm/internal/btree"

	"sexton/api"
)

// object is one incarnation of one key, immutable once stored: a change
// builds a new object. A COMPLETE incarnation is stored by value in the
// table's B-tree (completeItem), a PENDING one behind a pointer.
//
// It is kept to 40 bytes (there is one per key, millions of them, each
// stored by value in the tree with its key: a 56-byte completeItem):
// what many objects have in common sits behind attrs, and so does the put
// id, which most puts do not have. TestTreeNodeSizeClass holds it there.
type object struct {
	inc     api.ObjectIncarnation
	size    int64
	created int64
	attrs   *objectAttrs
}

// objectAttrs is the part of an object that many objects share: a tenant
// and a placement. Immutable: a replica change gives the object another
// attrs (state.withReplicas). Those with a DFS-free replica list are
// interned (state.internAttrs), so a million 1-replica objects of one
// tenant on one segment point to one of them.
type objectAttrs struct {
	tenant   string                  // interned
	replicas []api.ReplicaDescriptor // never mutated
	// putID is "" but for the rare put that names one; an object with one
	// has attrs of its own (state.makeObject: 64 bytes, its tenant and
	// replicas still shared). It was a pointer field of object, which
	// made every tree item 8 bytes longer for it.
	putID string
}

func (o *object) tenant() string                    { return o.attrs.tenant }
func (o *object) replicas() []api.ReplicaDescriptor { return o.attrs.replicas }

func (o *object) putID() string { return o.attrs.putID }

// entry is what a key holds: its visible (COMPLETE) incarnation, the put
// in progress (PENDING), and the head of the list (via task.keyNext) of its
// pending delete tasks; any of them may be nil, and a key is in the table
// while any is set. get assembles it and set takes it apart again: the
// three live in different places (objectTable).
type entry struct {
	complete *object
	pending  *object
	tasks    *task
}

// objectTable holds every key's entry, in four places:
//
//   - complete: a B-tree, in key order, of every key with a COMPLETE
//     incarnation, the object stored by value beside its key. It is the
//     table proper: almost every key has just a COMPLETE incarnation.
//   - pending: key → PENDING incarnation, the puts in flight.
//   - pendingPuts: the same PENDING incarnations ordered by (created,
//     key), so the leader finds stale puts without a scan.
//   - tasks: key → head of its delete tasks (bounded by the registry),
//     kept by the key's hash (taskHeads).
//
// Why a B-tree of values and no hash map: the garbage collector's cost.
// A hash map of keys to object pointers (what this was) gives the
// collector three pointers to follow per key and an object to mark and
// scan at a random address; at ten million keys the leader spent 60–74 %
// of its CPU in the collector while a snapshot was written. Here a key
// costs the collector its key string, which holds no pointers, and its
// attrs, shared by most keys: a full collection with a million objects
// live took 137 ms and takes 25 (BenchmarkGCLargeState). The tree is
// fsm/internal/btree, whose splits leave keys put in ascending order in
// full nodes, not half-full ones. The price is a point
// lookup of O(log n) string comparisons (~3 µs at ten million keys
// against ~0.5 µs), which set avoids where the COMPLETE incarnation did
// not change.
//
// A snapshot view takes lazy copy-on-write clones of the two B-trees
// (btree's Clone: O(1); a node is copied on its first write after) and
// walks them in key order beside Apply: the objects in the complete
// tree's nodes are values, so the clone's nodes keep the incarnations
// of the moment it was taken.
type objectTable struct {
	complete    *btree.BTreeG[completeItem]
	pending     map[string]*object
	pendingPuts *btree.BTreeG[pendingRef]
	tasks       taskHeads
}

// indexDegree is the B-tree degree: nodes of up to 61 items, which at 56
// bytes each (plus the 8-byte header Go gives an allocation with
// pointers) fill the 3,456-byte size class; 63 items would take the
// 4,096-byte one, ~8 bytes more per stored object
// (TestTreeNodeSizeClass). It also bounds what the first write to a node
// after a snapshot copies.
const indexDegree = 31

// completeItem is one key with its COMPLETE incarnation (56 bytes).
type completeItem struct {
	key string
	obj object
}

func (a completeItem) less(b completeItem) bool { return a.key < b.key }

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
		complete:    btree.NewG(indexDegree, completeItem.less),
		pending:     make(map[string]*object),
		pendingPuts: btree.NewG(indexDegree, pendingRef.less),
		tasks:       newTaskHeads(),
	}
}

// completeCount is the number of keys with a COMPLETE incarnation.
func (t *objectTable) completeCount() int { return t.complete.Len() }

// pendingCount is the number of keys with a PENDING incarnation.
func (t *objectTable) pendingCount() int { return len(t.pending) }

// get returns key's entry. Its complete is a copy of the stored
// incarnation, its own to the caller; set recognizes it (by pointer) as
// unchanged.
func (t *objectTable) get(key string) entry {
	it, ok := t.complete.Get(completeItem{key: key})
	return t.entryAround(key, it, ok)
}

// takeComplete is get for a caller that drops key's COMPLETE incarnation
// unless it refuses: the incarnation leaves the tree in the descent that
// finds it, so a remove walks the tree once, not twice (a lookup and then
// a delete, each a chain of cache misses at millions of keys). The
// returned entry's complete is the taken copy; a caller that refuses gives
// it back with putBack, and one that goes on passes set an old entry with
// complete nil, which is where the tree now stands.
func (t *objectTable) takeComplete(key string) entry {
	it, ok := t.complete.Delete(completeItem{key: key})
	return t.entryAround(key, it, ok)
}

// entryAround assembles key's entry around its COMPLETE item, if it has
// one (ok), and its PENDING incarnation and task list.
func (t *objectTable) entryAround(key string, it completeItem, ok bool) entry {
	var e entry
	if ok {
		o := it.obj
		e.complete = &o
	}
	if len(t.pending) > 0 {
		e.pending = t.pending[key]
	}
	e.tasks = t.tasksOf(key)
	return e
}

// putBack returns a COMPLETE incarnation that takeComplete took.
func (t *objectTable) putBack(key string, o *object) {
	t.complete.ReplaceOrInsert(completeItem{key, *o})
}

// tasksOf returns the head of key's task list, without a walk of the tree.
func (t *objectTable) tasksOf(key string) *task {
	return t.tasks.get(key)
}

// setTasks makes head key's task list (nil: none).
func (t *objectTable) setTasks(key string, head *task) {
	t.tasks.set(key, head)
}

// set replaces old (what get returned for key, unchanged since) with e.
// An e.complete that is old.complete (the same pointer) is left where it
// is: objects are immutable, so a changed one is a new pointer.
func (t *objectTable) set(key string, old, e entry) {
	switch {
	case e.complete == old.complete:
	case e.complete != nil:
		t.complete.ReplaceOrInsert(completeItem{key, *e.complete})
	default:
		t.complete.Delete(completeItem{key: key})
	}
	if e.pending != old.pending {
		if old.pending != nil {
			t.pendingPuts.Delete(pendingRef{created: old.pending.created, key: key})
			delete(t.pending, key)
		}
		if e.pending != nil {
			t.pendingPuts.ReplaceOrInsert(pendingRef{e.pending.created, key, e.pending})
			t.pending[key] = e.pending
		}
	}
	if e.tasks != old.tasks {
		t.setTasks(key, e.tasks)
	}
}

// ascendComplete calls fn with every key that has a COMPLETE incarnation,
// is under prefix and sorts after after, in key order, with that
// incarnation (valid during the call only), until fn returns false. It
// costs O(log n) plus the keys visited: the keys under a prefix are one
// contiguous run of the tree.
func (t *objectTable) ascendComplete(prefix, after string, fn func(key string, o *object) bool) {
	var cur object
	t.complete.AscendGreaterOrEqual(completeItem{key: max(prefix, after)}, func(it completeItem) bool {
		k := it.key
		if k == after {
			return true
		}
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		cur = it.obj
		return fn(k, &cur)
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

// keys returns every key the table holds, in no order. O(table): for the
// rare whole-table operator action and the invariant checks.
func (t *objectTable) keys() []string {
	out := make([]string, 0, t.complete.Len()+len(t.pending)+t.tasks.len())
	t.complete.Ascend(func(it completeItem) bool {
		out = append(out, it.key)
		return true
	})
	for k := range t.pending {
		if !t.complete.Has(completeItem{key: k}) {
			out = append(out, k)
		}
	}
	t.tasks.each(func(k string, _ *task) {
		if t.pending[k] == nil && !t.complete.Has(completeItem{key: k}) {
			out = append(out, k)
		}
	})
	return out
}

// restoreComplete stores a restored COMPLETE incarnation; false: key
// already had one.
func (t *objectTable) restoreComplete(key string, o object) bool {
	_, dup := t.complete.ReplaceOrInsert(completeItem{key, o})
	return !dup
}

// restorePending stores a restored PENDING incarnation; false: key
// already had one.
func (t *objectTable) restorePending(key string, o *object) bool {
	if t.pending[key] != nil {
		return false
	}
	t.pending[key] = o
	t.pendingPuts.ReplaceOrInsert(pendingRef{o.created, key, o})
	return true
}

// clone returns lazy copy-on-write clones of the two B-trees, for a
// snapshot view: they hold every incarnation the table holds now, and
// can be read on another goroutine while Apply goes on. Cost: two btree
// clones, independent of the object count.
func (t *objectTable) clone() (*btree.BTreeG[completeItem], *btree.BTreeG[pendingRef]) {
	return t.complete.Clone(), t.pendingPuts.Clone()
}
