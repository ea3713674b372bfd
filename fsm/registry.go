package fsm

import (
	"sexton/api"
)

// DefaultRegistryCapacity is the LocalDeleteRegistry's size when Config
// names none.
const DefaultRegistryCapacity = 50000

// taskIdent is what makes a task unique: one segment, one key, one
// incarnation.
type taskIdent struct {
	seg api.SegmentID
	key string
	inc api.ObjectIncarnation
}

// task is a pending local-delete task. Its fields are immutable once
// stored, except keyNext, which only the registry touches (a snapshot view
// copies the other fields and never follows it).
type task struct {
	id      uint64
	seg     api.SegmentID // interned
	key     string
	tenant  string // interned
	inc     api.ObjectIncarnation
	created int64
	keyNext *task // next pending task of the same key
}

func (t *task) ident() taskIdent { return taskIdent{seg: t.seg, key: t.key, inc: t.inc} }

func (t *task) view() api.LocalDeleteTask {
	return api.LocalDeleteTask{ID: t.id, Segment: t.seg, Key: t.key, Tenant: t.tenant, Incarnation: t.inc, Created: t.created}
}

// segQueue lists a segment's task ids in id order. Ids only grow, so append
// keeps the order; a dropped task is skipped lazily and the slice compacted
// once most of it is dead, which keeps Ack O(1) and Fetch O(returned +
// dead-since-compaction).
type segQueue struct {
	ids  []uint64
	live int
}

// registry is the LocalDeleteRegistry: every pending task with the indexes
// Fetch, Ack, NotLive and Remove need.
type registry struct {
	capacity int
	byID     map[uint64]*task
	// byKey heads the list (via keyNext) of a key's pending tasks, any
	// segment, any incarnation. A key has a handful at most, so the list
	// is also the (segment, key, incarnation) uniqueness index, and the
	// common single-task key costs no slice.
	byKey map[string]*task
	bySeg map[api.SegmentID]*segQueue
}

func newRegistry(capacity int) *registry {
	return &registry{
		capacity: capacity,
		byID:     make(map[uint64]*task),
		byKey:    make(map[string]*task),
		bySeg:    make(map[api.SegmentID]*segQueue),
	}
}

func (r *registry) len() int { return len(r.byID) }

// fits reports whether n more tasks fit.
func (r *registry) fits(n int) bool { return len(r.byID)+n <= r.capacity }

func (r *registry) has(id taskIdent) bool {
	for t := r.byKey[id.key]; t != nil; t = t.keyNext {
		if t.ident() == id {
			return true
		}
	}
	return false
}

// insert stores t, which must not duplicate an existing ident or id.
func (r *registry) insert(t *task) {
	r.byID[t.id] = t
	t.keyNext = r.byKey[t.key]
	r.byKey[t.key] = t
	q := r.bySeg[t.seg]
	if q == nil {
		q = &segQueue{}
		r.bySeg[t.seg] = q
	}
	q.ids = append(q.ids, t.id)
	q.live++
}

// drop removes t.
func (r *registry) drop(t *task) {
	delete(r.byID, t.id)
	if head := r.byKey[t.key]; head == t {
		if t.keyNext == nil {
			delete(r.byKey, t.key)
		} else {
			r.byKey[t.key] = t.keyNext
		}
	} else {
		for p := head; p != nil; p = p.keyNext {
			if p.keyNext == t {
				p.keyNext = t.keyNext
				break
			}
		}
	}
	q := r.bySeg[t.seg]
	q.live--
	if q.live == 0 {
		delete(r.bySeg, t.seg)
		return
	}
	if dead := len(q.ids) - q.live; dead > 64 && dead > q.live {
		kept := make([]uint64, 0, q.live)
		for _, id := range q.ids {
			if x, ok := r.byID[id]; ok && x.seg == t.seg {
				kept = append(kept, id)
			}
		}
		q.ids = kept
	}
}

// keyCount is the number of pending tasks of key.
func (r *registry) keyCount(key string) int {
	n := 0
	for t := r.byKey[key]; t != nil; t = t.keyNext {
		n++
	}
	return n
}

// segCount is the number of pending tasks of seg.
func (r *registry) segCount(seg api.SegmentID) int {
	if q := r.bySeg[seg]; q != nil {
		return q.live
	}
	return 0
}

// fetchable reports invariant 7: t may be handed out only if no pending task
// of the same key, on any segment, names an older incarnation.
func (r *registry) fetchable(t *task) bool {
	for o := r.byKey[t.key]; o != nil; o = o.keyNext {
		if o.inc.Less(t.inc) {
			return false
		}
	}
	return true
}

// olderPending reports whether key has a pending task older than inc.
func (r *registry) olderPending(key string, inc api.ObjectIncarnation) bool {
	for o := r.byKey[key]; o != nil; o = o.keyNext {
		if o.inc.Less(inc) {
			return true
		}
	}
	return false
}

// eachOfSeg calls fn for seg's live tasks in id order until fn returns false.
func (r *registry) eachOfSeg(seg api.SegmentID, fn func(*task) bool) {
	q := r.bySeg[seg]
	if q == nil {
		return
	}
	for _, id := range q.ids {
		t, ok := r.byID[id]
		if !ok || t.seg != seg {
			continue
		}
		if !fn(t) {
			return
		}
	}
}
