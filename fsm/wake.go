package fsm

import (
	"slices"

	"sexton/api"
)

// Wake says whose long polls an applied entry may concern, so the master
// wakes only those instead of every holder's fetch after every entry.
//
// A segment is listed when the entry may have made one of its tasks
// fetchable — a new task on it that nothing withholds, or a task on it
// released from invariant-7 withholding because the last older
// incarnation's task of its key (on any segment) was dropped — or changed
// its fetch gate (mounted, unmounted, remounted at a new epoch,
// capabilities updated, retired). Entries that
// change what every fetch sees (a new master epoch, settings, a rebuild)
// set All. A listing is never a promise that something is fetchable; a
// missing one is a wake-up lost (the poll waits for its timeout), so the
// rules err towards listing.
type Wake struct {
	// All: every segment may be concerned; wake every poll.
	All bool
	// DFS: the entry was a DFS command (a unit's file may have become
	// ready). The master's waits for DFS files need nothing else.
	DFS bool
	// Segments are the concerned segments, sorted and distinct. The slice
	// is the FSM's scratch: read it before the next Apply.
	Segments []api.SegmentID
}

// wakeLinear is how many segments an entry collects by linear search
// before it switches to a map: most entries touch one to a few.
const wakeLinear = 16

// wakeSet collects an entry's Wake while it applies. It is reset at the
// start of every Apply and reuses its slice, so the common entry (a few
// segments) allocates nothing.
type wakeSet struct {
	all, dfs bool
	segs     []api.SegmentID
	seen     map[api.SegmentID]struct{} // only once segs outgrows wakeLinear
}

func (w *wakeSet) reset() {
	w.all, w.dfs = false, false
	w.segs = w.segs[:0]
	w.seen = nil
}

// segment lists id.
func (w *wakeSet) segment(id api.SegmentID) {
	n := len(w.segs)
	if n > 0 && w.segs[n-1] == id {
		return // the common run: a batch whose keys live on one segment
	}
	if w.seen == nil {
		if slices.Contains(w.segs, id) {
			return
		}
		if n < wakeLinear {
			w.segs = append(w.segs, id)
			return
		}
		w.seen = make(map[api.SegmentID]struct{}, 2*n)
		for _, s := range w.segs {
			w.seen[s] = struct{}{}
		}
	}
	if _, ok := w.seen[id]; ok {
		return
	}
	w.seen[id] = struct{}{}
	w.segs = append(w.segs, id)
}

// take sorts the collected segments and returns the Wake; its slice is
// valid until the next reset.
func (w *wakeSet) take() Wake {
	slices.Sort(w.segs)
	return Wake{All: w.all, DFS: w.dfs, Segments: w.segs}
}

// wakeFor marks what an entry concerns by its command alone; the tasks it
// creates or releases and the segments whose mount it changes are listed
// where that happens (createTasks, registry.drop, applyMount,
// applyUnmount, applyRetire).
func (w *wakeSet) wakeFor(cmd Command) {
	switch cmd.(type) {
	case *EpochBegin, *Settings, *RebuildBegin, *RebuildAdopt, *DFSMarked:
		// (DFSMarked: dropping a key's older DFS marks releases its
		// withheld tasks, on whatever segments they are.)
		// Rare, and they change what every fetch answers (the master
		// epoch in every answer; registered segments; adopted tasks):
		// wake everyone rather than reason about each.
		w.all = true
	case *DFSConfigure, *DFSTouch, *DFSEvict, *DFSFileOp, *DFSSetMaxBuckets, *DFSMarkLost:
		w.dfs = true
	}
}
