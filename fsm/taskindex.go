package fsm

import "slices"

// taskIndex finds a task by id. Ids are handed out in order, so tasks live
// in pages of 64 consecutive ids: inserting appends to the current page
// (hot in cache), and a lookup is one access to a small map of pages plus
// an array index, instead of a probe into a 50,000-entry map. A page is
// freed when its last task goes; at worst (one live task per page) the
// index costs ~520 bytes per task.
type taskIndex struct {
	pages map[uint64]*taskPage
	n     int
	// last caches the page of the newest insert.
	lastNo   uint64
	lastPage *taskPage
}

const taskPageBits = 6

type taskPage struct {
	slots [1 << taskPageBits]*task
	live  int
}

func newTaskIndex() taskIndex { return taskIndex{pages: make(map[uint64]*taskPage)} }

func (x *taskIndex) len() int { return x.n }

func (x *taskIndex) get(id uint64) *task {
	p := x.page(id >> taskPageBits)
	if p == nil {
		return nil
	}
	return p.slots[id&(1<<taskPageBits-1)]
}

func (x *taskIndex) page(no uint64) *taskPage {
	if x.lastPage != nil && x.lastNo == no {
		return x.lastPage
	}
	return x.pages[no]
}

// put stores t, whose id must not be stored yet.
func (x *taskIndex) put(t *task) {
	no := t.id >> taskPageBits
	p := x.page(no)
	if p == nil {
		p = &taskPage{}
		x.pages[no] = p
	}
	x.lastNo, x.lastPage = no, p
	p.slots[t.id&(1<<taskPageBits-1)] = t
	p.live++
	x.n++
}

// remove drops the task with t's id.
func (x *taskIndex) remove(t *task) {
	no := t.id >> taskPageBits
	p := x.page(no)
	p.slots[t.id&(1<<taskPageBits-1)] = nil
	p.live--
	x.n--
	if p.live == 0 {
		delete(x.pages, no)
		if x.lastPage == p {
			x.lastPage = nil
		}
	}
}

// ascend calls fn for every task in id order until fn returns false. It
// sorts the page numbers (one per 64 ids), not the tasks: a snapshot of a
// backlog of n tasks sorted n pointers, each compare a cache miss, and a
// first page of the task listing needed all n of them.
func (x *taskIndex) ascend(fn func(*task) bool) {
	nos := make([]uint64, 0, len(x.pages))
	for no := range x.pages {
		nos = append(nos, no)
	}
	slices.Sort(nos)
	for _, no := range nos {
		for _, t := range x.pages[no].slots {
			if t != nil && !fn(t) {
				return
			}
		}
	}
}
