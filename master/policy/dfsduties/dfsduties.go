package dfsduties

import (
	"cmp"
	"errors"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
)

// Duties is the leader's soft state for its DFS duties: reads to
// propose as touches (coalesced), stray files seen, and the backoff of
// failed file ops. None of it is replicated; a new leader starts it afresh
// and resumes the file work from the state.
type Duties struct {
	mu       sync.Mutex
	touches  map[string]dfsalloc.EntryRef // to propose at the next check
	touched  map[string]time.Time         // when each entry was last proposed
	strays   map[string]time.Time         // unknown files and when first seen
	attempts map[uint64]time.Time         // last failed file op per unit
}

// MaxPendingTouches bounds the touch buffer; reads beyond it between two
// checks are simply not recorded (LRU order is a hint, not a guarantee).
const MaxPendingTouches = 1 << 16

// New is a term's DFS duty state before its first check.
func New() *Duties {
	return &Duties{touches: map[string]dfsalloc.EntryRef{}, touched: map[string]time.Time{},
		strays: map[string]time.Time{}, attempts: map[uint64]time.Time{}}
}

func touchKey(r dfsalloc.EntryRef) string {
	return r.Key + "\x00" + r.Desc.Path + "\x00" + strconv.FormatInt(r.Desc.Offset, 10)
}

// NoteRead records a read at now of the DFS replicas in reps of key, at
// most once per entry per check interval.
func (d *Duties) NoteRead(key string, reps []api.ReplicaDescriptor, now time.Time, interval time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range reps {
		if r.Kind != api.ReplicaDFS || r.DFS == nil {
			continue
		}
		ref := dfsalloc.EntryRef{Key: key, Desc: *r.DFS}
		k := touchKey(ref)
		if now.Sub(d.touched[k]) < interval || len(d.touches) >= MaxPendingTouches {
			continue
		}
		d.touched[k] = now
		d.touches[k] = ref
	}
}

// TakeTouches empties the touch buffer, sorted so the entry proposed is
// the same whatever the map order was, and forgets reads older than one
// interval.
func (d *Duties) TakeTouches(now time.Time, interval time.Duration) []dfsalloc.EntryRef {
	d.mu.Lock()
	refs := make([]dfsalloc.EntryRef, 0, len(d.touches))
	for _, r := range d.touches {
		refs = append(refs, r)
	}
	d.touches = map[string]dfsalloc.EntryRef{}
	cutoff := now.Add(-interval)
	for k, t := range d.touched {
		if t.Before(cutoff) {
			delete(d.touched, k)
		}
	}
	d.mu.Unlock()
	sort.Slice(refs, func(i, j int) bool { return touchKey(refs[i]) < touchKey(refs[j]) })
	return refs
}

// fileOpBackoff is the wait before retrying a unit's file op that the
// state counts failures failures of: 200 ms, doubling with each, up to
// 30 s.
func fileOpBackoff(failures uint32) time.Duration {
	d := 200 * time.Millisecond
	for i := uint32(0); i < failures && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// FileOpDue says whether a unit's file op, failed failures times by the
// state's count, may be tried at now: never failed under this leader, or
// its backoff has passed since the last failure.
func (d *Duties) FileOpDue(unit uint64, failures uint32, now time.Time) bool {
	d.mu.Lock()
	last, failed := d.attempts[unit]
	d.mu.Unlock()
	return !failed || now.Sub(last) >= fileOpBackoff(failures)
}

// FileOpDone records the outcome at now of a unit's file op.
func (d *Duties) FileOpDone(unit uint64, failed bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if failed {
		d.attempts[unit] = now
	} else {
		delete(d.attempts, unit)
	}
}

// Stray is a file below the DFS root that the state does not know, and
// when the leader first saw it.
type Stray struct {
	Path      string
	FirstSeen time.Time
}

// ScanStrays takes a listing of the DFS root at now: names the state does
// not know (known) are strays; seen is those listed for the first time,
// due those unknown for grace or longer, to remove once the state is
// checked again. Strays no longer listed, or known now, are forgotten.
func (d *Duties) ScanStrays(names []string, known map[string]bool, now time.Time, grace time.Duration) (seen []string, due []Stray) {
	d.mu.Lock()
	defer d.mu.Unlock()
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
		if known[name] {
			continue
		}
		first, ok := d.strays[name]
		switch {
		case !ok:
			d.strays[name] = now
			seen = append(seen, name)
		case now.Sub(first) >= grace:
			due = append(due, Stray{Path: name, FirstSeen: first})
		}
	}
	for name := range d.strays {
		if !present[name] || known[name] {
			delete(d.strays, name)
		}
	}
	return seen, due
}

// StrayRemoved forgets a stray file that was removed.
func (d *Duties) StrayRemoved(path string) {
	d.mu.Lock()
	delete(d.strays, path)
	d.mu.Unlock()
}

// Strays lists the strays seen, by path.
func (d *Duties) Strays() []Stray {
	d.mu.Lock()
	out := make([]Stray, 0, len(d.strays))
	for p, t := range d.strays {
		out = append(out, Stray{Path: p, FirstSeen: t})
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Stray) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// LostUnits decides which ready units have lost their file. An unusable
// root stops the whole decision: a file missing from it says nothing
// about the cluster's data. Any other error skips that unit.
func LostUnits(units []dfsalloc.UnitStats, exists func(string) (bool, error)) ([]dfsalloc.UnitStats, error) {
	var lost []dfsalloc.UnitStats
	for _, u := range units {
		if u.File != dfsalloc.FileReady || u.State == dfsalloc.UnitDeleting {
			continue
		}
		ok, err := exists(u.Path)
		if errors.Is(err, dfsio.ErrRootUnusable) {
			return nil, err
		}
		if err != nil || ok {
			continue
		}
		lost = append(lost, u)
	}
	return lost, nil
}

// UnreadyDFSFile is the path of the first DFS replica in reps whose unit
// (in units, sorted by unit) does not have its file confirmed yet, or ""
// when every one has: a client must not write into a missing file.
func UnreadyDFSFile(units []dfsalloc.UnitStats, reps []api.ReplicaDescriptor) string {
	for _, r := range reps {
		if r.Kind != api.ReplicaDFS || r.DFS == nil {
			continue
		}
		i, found := slices.BinarySearchFunc(units, r.DFS.UnitID, func(u dfsalloc.UnitStats, id uint64) int { return cmp.Compare(u.Unit, id) })
		if !found || units[i].File != dfsalloc.FileReady {
			return r.DFS.Path
		}
	}
	return ""
}
