package fsm

import (
	"fmt"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// CmdDFSMarked: the leader wrote removal records to the DFS root's
// journal (docs/DESIGN.md §9).
const CmdDFSMarked CommandType = 27

// DFSMarkedV1 is DFSMarked's schema version.
const DFSMarkedV1 uint8 = 1

// DFSMark is a removal record the leader owes the DFS root's journal
// (dfsio/DESIGN.md "Range records"): key's incarnation Inc left the table
// with a DFS replica at Desc. Through (a removal) kills every record of
// the key at or below Inc; without it (a revoked put) only Inc's.
//
// Held says the allocator keeps the range until DFSMarked frees it (a
// removal, a revoke, a supersede); an evicted or lost entry's range is
// already released, and DFSMarked frees nothing for it.
type DFSMark struct {
	Key     string                `msgpack:"key"`
	Inc     api.ObjectIncarnation `msgpack:"inc"`
	Desc    api.DFSDescriptor     `msgpack:"desc"`
	Through bool                  `msgpack:"through,omitempty"`
	Held    bool                  `msgpack:"held,omitempty"`
}

// Bounds of the mark queue. It travels in the dfs_buckets section's head
// record, which must fit one snapshot chunk (1 MiB): MaxDFSMarkBytes of
// keys plus markOverhead per mark stays well below it.
const (
	MaxDFSMarks     = 4096
	MaxDFSMarkBytes = 512 << 10
	markOverhead    = 96
)

// maxDFSMarks is the queue's bound in marks: a variable only so scenario
// tests can fill the queue with a few keys; nothing else changes it.
var maxDFSMarks = MaxDFSMarks

// DFSMarked drops the queued marks equal to Marks: the leader appended
// their removal records to the journal and synced it.
type DFSMarked struct {
	V     uint8     `msgpack:"v"`
	Marks []DFSMark `msgpack:"marks"`
	Now   int64     `msgpack:"now"`
}

func boundsDFSMarked(c *DFSMarked, b bounder) error {
	if len(c.Marks) > MaxDFSMarks {
		return b.bad("%d marks exceed %d", len(c.Marks), MaxDFSMarks)
	}
	refs := make([]dfsalloc.EntryRef, len(c.Marks))
	for i, m := range c.Marks {
		refs[i] = dfsalloc.EntryRef{Key: m.Key, Desc: m.Desc}
	}
	return entryRefsBounded(b, refs)
}

func markBytes(m DFSMark) int { return len(m.Key) + markOverhead }

// dfsMarksFit reports whether the marks of o's DFS replicas fit the queue.
// A removal that does not fit is refused, untouched, like one whose
// delete tasks do not fit the registry: the leader drains the queue.
func (st *state) dfsMarksFit(key string, o *object) *api.Error {
	if st.dfs == nil {
		return nil
	}
	n := len(dfsReplicasOf(o))
	if n == 0 {
		return nil
	}
	if len(st.dfs.marks)+n > maxDFSMarks || st.dfs.markBytes+n*(len(key)+markOverhead) > MaxDFSMarkBytes {
		return api.Errorf(api.CodeLocalDeleteRegistryFull, "key %q: %d DFS removal records are waiting to be written to the DFS root's journal (at most %d, %d bytes); retry once the leader has written them (is the DFS root usable?)",
			key, len(st.dfs.marks), maxDFSMarks, MaxDFSMarkBytes)
	}
	return nil
}

// queueDFSMarks queues a removal record for each DFS replica of o, which
// just left the table (dfsMarksFit said they fit). The allocator keeps
// each range until DFSMarked: a range reused before its record is durable
// would turn a rebuild's "killed" into "does not verify", which drops the
// key, older acknowledged values included.
func (st *state) queueDFSMarks(key string, o *object, through bool) {
	if st.dfs == nil {
		return
	}
	for _, d := range dfsReplicasOf(o) {
		m := DFSMark{Key: key, Inc: o.inc, Desc: d, Through: through, Held: true}
		st.dfs.marks = append(st.dfs.marks, m)
		st.dfs.markBytes += markBytes(m)
		st.wake.dfs = true
	}
}

// applyDFSMarked drops each named mark from the queue (the first equal
// one) and frees its range: its removal record is durable now. A mark not
// queued (a repeat) is ignored; a range the allocator no longer knows (its
// unit was marked lost) is skipped.
func (st *state) applyDFSMarked(c *DFSMarked) *DFSResult {
	if st.dfs == nil {
		return st.dfsOff("dfs marked")
	}
	now := st.dfsNow(c.Now)
	for _, m := range c.Marks {
		for i, q := range st.dfs.marks {
			if q == m {
				st.dfs.marks = append(st.dfs.marks[:i:i], st.dfs.marks[i+1:]...)
				st.dfs.markBytes -= markBytes(m)
				if m.Held {
					_ = st.dfs.alloc.Free(m.Key, m.Desc, now)
				}
				break
			}
		}
	}
	return &DFSResult{}
}

// DFSPendingMarks lists the removal records the leader owes the DFS
// root's journal, in the order they were queued (at most max).
func (f *FSM) DFSPendingMarks(max int) []DFSMark {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.dfs == nil || len(f.st.dfs.marks) == 0 {
		return nil
	}
	n := min(max, len(f.st.dfs.marks))
	return append([]DFSMark(nil), f.st.dfs.marks[:n]...)
}

// olderDFSMark reports whether a queued mark of key names an incarnation
// older than inc. Invariant 7 across holders and the DFS root: a holder's
// task of inc is withheld (not fetched, not answered by NotLive) until the
// removal records of the key's older DFS incarnations are durable, so a
// rebuild never finds inc tombstoned while an older value's DFS record
// still counts.
func (st *state) olderDFSMark(key string, inc api.ObjectIncarnation) bool {
	if st.dfs == nil || len(st.dfs.marks) == 0 {
		return false
	}
	for _, m := range st.dfs.marks {
		if m.Key == key && m.Inc.Less(inc) {
			return true
		}
	}
	return false
}

// fetchable is registry.fetchable (no older task of the key) and no older
// DFS mark of the key queued.
func (st *state) fetchable(t *task) bool {
	return st.reg.fetchable(t) && !st.olderDFSMark(t.key, t.inc)
}

// DFSMarksOf counts key's queued marks.
func (f *FSM) DFSMarksOf(key string) int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.st.dfs == nil {
		return 0
	}
	n := 0
	for _, m := range f.st.dfs.marks {
		if m.Key == key {
			n++
		}
	}
	return n
}

// restoreDFSMarks checks a snapshot's mark queue against the bounds Apply
// keeps and returns it with its size.
func restoreDFSMarks(ms []DFSMark) ([]DFSMark, int, error) {
	if len(ms) == 0 {
		return nil, 0, nil
	}
	if len(ms) > MaxDFSMarks {
		return nil, 0, fmt.Errorf("%d DFS removal marks exceed %d", len(ms), MaxDFSMarks)
	}
	size := 0
	for i, m := range ms {
		if err := api.ValidKey(m.Key); err != nil {
			return nil, 0, fmt.Errorf("DFS removal mark %d: %v", i, err)
		}
		if m.Inc.IsZero() || m.Desc.Path == "" {
			return nil, 0, fmt.Errorf("DFS removal mark %d (%q): no incarnation or path", i, m.Key)
		}
		size += markBytes(m)
	}
	if size > MaxDFSMarkBytes {
		return nil, 0, fmt.Errorf("DFS removal marks of %d bytes exceed %d", size, MaxDFSMarkBytes)
	}
	return ms, size, nil
}

// markDropped queues a removal mark (that incarnation only) for an
// evicted or lost entry whose incarnation still names it, when it fits:
// the allocator has already released its range, and an evicted value is
// no removal, so the mark only keeps a rebuild from preferring it to a
// removal of a newer incarnation on a holder; past the queue's bound it is
// left out rather than refusing the eviction.
func (st *state) markDropped(ref dfsalloc.EntryRef, e entry) {
	// A held range the allocator just dropped (its unit was lost) is no
	// longer this mark's to free: the allocator may hand it out again.
	for i := range st.dfs.marks {
		if q := &st.dfs.marks[i]; q.Held && q.Key == ref.Key && q.Desc == ref.Desc {
			q.Held = false
		}
	}
	var o *object
	switch {
	case hasDFS(e.complete, ref.Desc):
		o = e.complete
	case hasDFS(e.pending, ref.Desc):
		o = e.pending
	default:
		return
	}
	m := DFSMark{Key: ref.Key, Inc: o.inc, Desc: ref.Desc}
	if len(st.dfs.marks)+1 > maxDFSMarks || st.dfs.markBytes+markBytes(m) > MaxDFSMarkBytes {
		return
	}
	st.dfs.marks = append(st.dfs.marks, m)
	st.dfs.markBytes += markBytes(m)
	st.wake.dfs = true
}
