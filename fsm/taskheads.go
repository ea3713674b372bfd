package fsm

import (
	"fmt"
	"hash/maphash"
)

// taskHeads maps a key to the head of its task list (task.keyNext links
// the rest), keyed by a 64-bit hash of the key rather than by the key.
//
// Why not a map[string]*task: its growth. A remove records a task per
// removed key, so a backlog of delete tasks grows this map by one entry a
// key, and a Go map that grows rehashes every key it holds, reading each
// key's bytes from wherever that string lives: cache misses, one a key.
// Under 16 clients × 64-key removes the string-keyed map's growth was 13 %
// of the leader's CPU and the lookups another 7 % (docs/SCALING.md, "The
// fsm's memory and CPU"); a map of hashes rehashes 8-byte integers it holds
// in place, at half the cost an insert (BenchmarkTaskHeads), and its slots
// are 16 bytes, not 24.
//
// A hash names a key only when the head stored under it carries that key
// (task.key): two keys whose hashes are equal are told apart there, and
// the second one's head goes to collide, a plain map by key that stays
// nil until two keys of one hash have task lists at once. Nothing
// observable depends on the hash: which of two colliding keys lands in
// collide changes where a head is kept, never which head a key has, so
// the random seed leaves Apply as deterministic as Go's own map iteration
// order does (no answer, snapshot or invariant depends on the order each
// walks it in: keys' one caller sorts).
type taskHeads struct {
	seed    maphash.Seed
	mask    uint64 // all ones; tests narrow it to force collisions
	byHash  map[uint64]*task
	collide map[string]*task // nil until two keys of one hash have lists at once
}

func newTaskHeads() taskHeads {
	return taskHeads{seed: maphash.MakeSeed(), mask: ^uint64(0), byHash: make(map[uint64]*task)}
}

func (h *taskHeads) hash(key string) uint64 { return maphash.String(h.seed, key) & h.mask }

// len is the number of keys with a task list.
func (h *taskHeads) len() int { return len(h.byHash) + len(h.collide) }

// get returns the head of key's task list, nil if it has none.
func (h *taskHeads) get(key string) *task {
	if h.len() == 0 {
		return nil
	}
	if head := h.byHash[h.hash(key)]; head != nil && head.key == key {
		return head
	}
	if len(h.collide) == 0 {
		return nil
	}
	return h.collide[key]
}

// set makes head key's task list (nil: none). A non-nil head carries key.
func (h *taskHeads) set(key string, head *task) {
	// A key kept in collide stays there until its list empties, even once
	// its hash's slot is free: a key is then in one place only, so get
	// never finds a stale head.
	if len(h.collide) > 0 {
		if _, ok := h.collide[key]; ok {
			if head == nil {
				delete(h.collide, key)
			} else {
				h.collide[key] = head
			}
			return
		}
	}
	x := h.hash(key)
	cur := h.byHash[x]
	switch {
	case cur == nil || cur.key == key:
		if head != nil {
			h.byHash[x] = head
		} else if cur != nil {
			delete(h.byHash, x)
		}
	case head != nil:
		if h.collide == nil {
			h.collide = make(map[string]*task)
		}
		h.collide[key] = head
	}
}

// each calls fn for every key with a task list, in no order.
func (h *taskHeads) each(fn func(key string, head *task)) {
	for _, head := range h.byHash {
		fn(head.key, head)
	}
	for key, head := range h.collide {
		fn(key, head)
	}
}

// check says whether every head is kept where get finds it: a head in
// byHash under its key's hash, a head in collide under its own key and
// not in byHash as well.
func (h *taskHeads) check() error {
	for x, head := range h.byHash {
		if head == nil {
			return fmt.Errorf("task heads: hash %x keeps an empty list", x)
		}
		if got := h.hash(head.key); got != x {
			return fmt.Errorf("task heads: the list of %q kept under hash %x, not its own %x", head.key, x, got)
		}
	}
	for key, head := range h.collide {
		if head == nil || head.key != key {
			return fmt.Errorf("task heads: collide keeps a wrong or empty list for %q", key)
		}
		if cur := h.byHash[h.hash(key)]; cur != nil && cur.key == key {
			return fmt.Errorf("task heads: %q kept in byHash and in collide", key)
		}
	}
	return nil
}
