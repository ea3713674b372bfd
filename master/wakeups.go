package master

import (
	"sync"

	"sexton/api"
	"sexton/fsm"
)

// wakeups wakes long polls when an applied entry concerns them. A holder's
// fetch of segment S waits on S's channel alone, closed only by an entry
// the fsm says concerns S (fsm.Wake: a task fetchable on S, a task on S
// released by an ack elsewhere, S's mount changing) or one that concerns
// everyone; waits for DFS files wait on the DFS channel. With a channel
// for everything, each applied entry woke every holder's poll to rescan
// the fsm and park again: with 1,000 holders, 1,000 wake-ups per entry.
//
// A segment's slot exists only while some poll watches it (a count of
// watchers), so the map is bounded by the polls in flight, whatever
// segment ids callers present.
type wakeups struct {
	mu   sync.Mutex
	segs map[api.SegmentID]*wakeSlot
	dfs  chan struct{} // nil until someone waits
}

// wakeSlot is one segment's current channel and how many polls hold it.
type wakeSlot struct {
	ch       chan struct{}
	watchers int
}

func newWakeups() *wakeups { return &wakeups{segs: map[api.SegmentID]*wakeSlot{}} }

// watch returns seg's slot, whose channel closes at the next entry
// concerning seg. Take it before reading the fsm, so an entry applied
// between the read and the wait is not missed, and hand it back to
// unwatch when done waiting.
func (w *wakeups) watch(seg api.SegmentID) *wakeSlot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.segs[seg]
	if s == nil {
		s = &wakeSlot{ch: make(chan struct{})}
		w.segs[seg] = s
	}
	s.watchers++
	return s
}

// unwatch hands back a slot watch returned (nil: nothing to hand back).
// A woken slot has left the map already.
func (w *wakeups) unwatch(seg api.SegmentID, s *wakeSlot) {
	if s == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.segs[seg] != s {
		return
	}
	if s.watchers--; s.watchers == 0 {
		delete(w.segs, seg)
	}
}

// dfsChanged returns a channel closed at the next DFS entry (or one that
// concerns everyone).
func (w *wakeups) dfsChanged() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dfs == nil {
		w.dfs = make(chan struct{})
	}
	return w.dfs
}

// wake wakes whoever the applied entry concerns. Most entries concern no
// waiter (a put) or one segment (a remove, an ack).
func (w *wakeups) wake(x fsm.Wake) {
	if x.All {
		w.all()
		return
	}
	if !x.DFS && len(x.Segments) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, seg := range x.Segments {
		if s := w.segs[seg]; s != nil {
			close(s.ch)
			delete(w.segs, seg)
		}
	}
	if x.DFS {
		w.wakeDFSLocked()
	}
}

// all wakes every waiter: an entry that concerns everyone, a restore, a
// lost leadership (a parked poll then answers NOT_LEADER at once).
func (w *wakeups) all() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.segs {
		close(s.ch)
	}
	clear(w.segs)
	w.wakeDFSLocked()
}

func (w *wakeups) wakeDFSLocked() {
	if w.dfs != nil {
		close(w.dfs)
		w.dfs = nil
	}
}
