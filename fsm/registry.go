package fsm

import (
	"cmp"
	"slices"
	"strings"

	"sexton/api"
)

// DefaultRegistryCapacity is the LocalDeleteRegistry's size when Config
// names none.
const DefaultRegistryCapacity = api.DefaultRegistryCapacity

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
// keeps the order. A dropped task is skipped lazily: the dead ids at the
// front are cut off as they die (drop), and the slice is compacted once
// most of what is left is dead, which keeps Ack amortized O(1) and Fetch
// O(returned + withheld + dead behind a live one). A holder acks in the
// order it fetched, which is id order, so its dead ids are a prefix; were
// they left in place until compaction, every fetch of a holder working
// off a backlog of n tasks would step over up to n/2 of them, under the
// FSM's read lock (TestSegQueueCutsItsDeadPrefix).
type segQueue struct {
	ids  []uint64
	live int
}

// registry is the LocalDeleteRegistry: every pending task with the indexes
// Fetch, Ack, NotLive and Remove need.
type registry struct {
	capacity int
	byID     taskIndex
	bySeg    map[api.SegmentID]*segQueue
	// objs holds each key's task list (entry.tasks, linked by keyNext),
	// oldest incarnation first (linkTask). Usually a key has a handful of
	// tasks, so the list is also the (segment, key, incarnation)
	// uniqueness index; but a hot key overwritten while one of its holders
	// is down collects thousands, so the questions asked per task (is an
	// older incarnation pending? which tasks did a drop release?) read
	// only the head of the list, never the whole of it.
	objs *objectTable
	// wake is the state's wake-up collector: drop lists the segments of
	// the tasks it releases (new tasks are listed by createTasks).
	wake *wakeSet
}

func newRegistry(capacity int, objs *objectTable, wake *wakeSet) *registry {
	return &registry{
		capacity: capacity,
		byID:     newTaskIndex(),
		bySeg:    make(map[api.SegmentID]*segQueue),
		objs:     objs,
		wake:     wake,
	}
}

func (r *registry) len() int { return r.byID.len() }

// fits reports whether n more tasks fit.
func (r *registry) fits(n int) bool { return r.byID.len()+n <= r.capacity }

// hasIn reports whether the task list starting at head holds id.
func hasIn(head *task, id taskIdent) bool {
	for t := head; t != nil; t = t.keyNext {
		if t.ident() == id {
			return true
		}
	}
	return false
}

// index files t by id and segment; the caller links it into its key's
// entry (linkTask) and stores the entry.
func (r *registry) index(t *task) {
	r.byID.put(t)
	q := r.bySeg[t.seg]
	if q == nil {
		q = &segQueue{}
		r.bySeg[t.seg] = q
	}
	q.ids = append(q.ids, t.id)
	q.live++
}

// linkTask inserts t into e's task list, which is kept ordered by
// incarnation, oldest first, tasks of one incarnation in the order they
// were linked. The head is then the key's oldest pending incarnation, so
// invariant 7's withholding (olderIn) costs O(1). A new task is usually
// of the newest incarnation and walks the list to its end: linear in the
// key's tasks, once per task created.
func linkTask(e *entry, t *task) {
	if e.tasks == nil || t.inc.Less(e.tasks.inc) {
		t.keyNext = e.tasks
		e.tasks = t
		return
	}
	p := e.tasks
	for p.keyNext != nil && !t.inc.Less(p.keyNext.inc) {
		p = p.keyNext
	}
	t.keyNext = p.keyNext
	p.keyNext = t
}

// insertRestored stores the tasks of a snapshot (in id order, none
// duplicating another's ident or id, their keys holding no tasks yet). Each
// key's list is built in one pass from the tasks sorted by key, then
// incarnation, then id: the order linkTask keeps, since Apply links the
// tasks of one incarnation in id order. Linking them one by one would walk
// a hot key's list once per task.
func (r *registry) insertRestored(ts []*task) {
	for _, t := range ts {
		r.index(t)
	}
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, func(a, b *task) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		if a.inc != b.inc {
			if a.inc.Less(b.inc) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.id, b.id)
	})
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].key == sorted[i].key {
			sorted[j-1].keyNext = sorted[j]
			j++
		}
		sorted[j-1].keyNext = nil
		r.objs.setTasks(sorted[i].key, sorted[i])
		i = j
	}
}

// drop removes t.
func (r *registry) drop(t *task) {
	r.byID.remove(t)
	head := r.objs.tasksOf(t.key)
	if head == t {
		head = t.keyNext
	} else {
		for p := head; p != nil; p = p.keyNext {
			if p.keyNext == t {
				p.keyNext = t.keyNext
				break
			}
		}
	}
	t.keyNext = nil
	r.objs.setTasks(t.key, head)
	r.wakeReleased(head, t.inc)
	q := r.bySeg[t.seg]
	q.live--
	if q.live == 0 {
		delete(r.bySeg, t.seg)
		return
	}
	for len(q.ids) > 0 && r.byID.get(q.ids[0]) == nil {
		q.ids = q.ids[1:]
	}
	if dead := len(q.ids) - q.live; dead > 64 && dead > q.live {
		kept := make([]uint64, 0, q.live)
		for _, id := range q.ids {
			if x := r.byID.get(id); x != nil && x.seg == t.seg {
				kept = append(kept, id)
			}
		}
		q.ids = kept
	}
}

// wakeReleased lists the segments of the tasks in the list at head that
// dropping a task of incarnation gone made fetchable: newer than gone (so
// gone withheld them, invariant 7) and with no older task left, which in
// the ordered list is the run of the head's incarnation. This is how an
// ack on one segment wakes the holder of another. O(that run).
func (r *registry) wakeReleased(head *task, gone api.ObjectIncarnation) {
	if head == nil || !gone.Less(head.inc) {
		return
	}
	for o := head; o != nil && o.inc == head.inc; o = o.keyNext {
		r.wake.segment(o.seg)
	}
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
	return !olderIn(r.objs.tasksOf(t.key), t.inc)
}

// olderIn reports whether the task list at head has a task older than inc:
// the head is the oldest (linkTask).
func olderIn(head *task, inc api.ObjectIncarnation) bool {
	return head != nil && head.inc.Less(inc)
}

// eachOfSeg calls fn for seg's live tasks in id order until fn returns false.
func (r *registry) eachOfSeg(seg api.SegmentID, fn func(*task) bool) {
	q := r.bySeg[seg]
	if q == nil {
		return
	}
	for _, id := range q.ids {
		t := r.byID.get(id)
		if t == nil || t.seg != seg {
			continue
		}
		if !fn(t) {
			return
		}
	}
}
