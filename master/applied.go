package master

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// appliedHooks lets a proposer hear its entry's result on the fsm
// goroutine, the moment this node applies the entry, instead of when raft
// answers the proposal's future. That answer reaches the proposer two
// goroutine hand-offs later (raft's fsm goroutine wakes propose's waiter,
// which wakes the proposer), and at 16 × 1 removes every hand-off on the
// way back to the clients is part of the cycle that bounds the rate
// (docs/SCALING.md, "The write path").
//
// An entry is known by its encoded bytes: hashicorp/raft hands the
// leader's fsm the very Log it was given (its in-flight future's, or the
// log cache's shallow copy), so the Data slice starts at the same byte.
// The hook holds the slice until it is removed, so no other entry can
// reuse that address meanwhile. If a raft version copied the bytes, the
// hook would simply never fire and the future would answer as before:
// the hook is a shortcut, never the only answer.
type appliedHooks struct {
	n  atomic.Int32 // hooks registered; Apply skips the lock at zero
	mu sync.Mutex
	m  map[*byte]func(any)
}

// add registers f for the entry data; the returned func removes it (call
// it once the proposal's future has answered, whether or not f ran).
func (h *appliedHooks) add(data []byte, f func(any)) (remove func()) {
	key := unsafe.SliceData(data)
	h.mu.Lock()
	if h.m == nil {
		h.m = make(map[*byte]func(any))
	}
	h.m[key] = f
	h.mu.Unlock()
	h.n.Add(1)
	return func() {
		h.mu.Lock()
		if _, ok := h.m[key]; ok {
			delete(h.m, key)
			h.n.Add(-1)
		}
		h.mu.Unlock()
	}
}

// fire runs (and removes) the hook of the entry data, if any, with the
// fsm's result. Called on the fsm goroutine: hooks must not block.
func (h *appliedHooks) fire(data []byte, res any) {
	if h == nil || h.n.Load() == 0 || len(data) == 0 {
		return
	}
	key := unsafe.SliceData(data)
	h.mu.Lock()
	f, ok := h.m[key]
	if ok {
		delete(h.m, key)
		h.n.Add(-1)
	}
	h.mu.Unlock()
	if ok {
		f(res)
	}
}
