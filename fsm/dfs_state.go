package fsm

import (
	"errors"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// dfsState is the DFS allocator of the replicated state: nil until the
// first DFSConfigure. The allocator is not copy-on-write, so a snapshot
// copies its records under the write lock (about 0.3 µs per entry).
type dfsState struct {
	settings DFSSettings
	alloc    dfsalloc.Allocator
	// clock is the largest now handed to the allocator; replicated (it is
	// in the snapshot) so every master clamps alike.
	clock int64
	// marks are the removal records the leader owes the DFS root's
	// journal (dfs_marks.go), in the order they were queued; markBytes is
	// their size for the bound.
	marks     []DFSMark
	markBytes int
}

// dfsNow is the command's time, clamped to be non-decreasing: a new leader
// whose clock is behind must not move a deferral's clock backwards.
func (st *state) dfsNow(now int64) int64 {
	if st.dfs == nil {
		return now
	}
	if now > st.dfs.clock {
		st.dfs.clock = now
	}
	return st.dfs.clock
}

// dfsError maps an allocator error to the wire error a client sees.
func dfsError(op string, err error) *api.Error {
	if err == nil {
		return nil
	}
	e := api.AsError(err)
	switch {
	case errors.Is(err, dfsalloc.ErrNoSpace):
		e.Code = api.CodeNoSpace
	case errors.Is(err, dfsalloc.ErrInvalidRequest), errors.Is(err, dfsalloc.ErrInvalidConfig),
		errors.Is(err, dfsalloc.ErrWrongAllocator), errors.Is(err, dfsalloc.ErrWrongState):
		e.Code = api.CodeInvalidParams
	case errors.Is(err, dfsalloc.ErrUnknownUnit), errors.Is(err, dfsalloc.ErrUnknownEntry):
		e.Code = api.CodeObjectNotFound
	}
	e.Message = op + ": " + err.Error()
	return e
}

// dfsReplicasOf lists o's DFS descriptors.
func dfsReplicasOf(o *object) []api.DFSDescriptor {
	if o == nil {
		return nil
	}
	var out []api.DFSDescriptor
	for _, r := range o.replicas() {
		if r.Kind == api.ReplicaDFS && r.DFS != nil {
			out = append(out, *r.DFS)
		}
	}
	return out
}

// withoutDFS returns o without the DFS replica d (o itself if it has none).
func (st *state) withoutDFS(o *object, d api.DFSDescriptor) *object {
	if o == nil {
		return nil
	}
	found := false
	kept := make([]api.ReplicaDescriptor, 0, len(o.replicas()))
	for _, r := range o.replicas() {
		if r.Kind == api.ReplicaDFS && r.DFS != nil && *r.DFS == d {
			found = true
			continue
		}
		kept = append(kept, r)
	}
	if !found {
		return o
	}
	return st.withReplicas(o, kept)
}

// hasDFS reports whether o names exactly d.
func hasDFS(o *object, d api.DFSDescriptor) bool {
	if o == nil {
		return false
	}
	for _, r := range o.replicas() {
		if r.Kind == api.ReplicaDFS && r.DFS != nil && *r.DFS == d {
			return true
		}
	}
	return false
}

// dropDFSEntries drops the replicas of evicted or lost entries from their
// objects. An incarnation left with no replica is gone: a COMPLETE one is
// evicted (no tasks: nothing is left to delete), a PENDING one abandoned.
// It returns how many objects lost their last copy.
func (st *state) dropDFSEntries(refs []dfsalloc.EntryRef) int {
	gone := 0
	for _, ref := range refs {
		old := st.objects.get(ref.Key)
		e := old
		st.markDropped(ref, e)
		e.complete = st.withoutDFS(e.complete, ref.Desc)
		e.pending = st.withoutDFS(e.pending, ref.Desc)
		if e.complete != nil && len(e.complete.replicas()) == 0 {
			e.complete = nil
			gone++
			st.rememberRemoved(ref.Key)
		}
		if e.pending != nil && len(e.pending.replicas()) == 0 {
			e.pending = nil
		}
		if e != old {
			st.objects.set(ref.Key, old, e)
		}
	}
	return gone
}

// dfsSectionV1 is the version of the dfs_buckets section's head record.
const dfsSectionV1 uint8 = 1

// dfsSectionHead is the first record of the dfs_buckets section: what the
// allocator records do not carry (the whole configuration, the clamp clock).
type dfsSectionHead struct {
	V        uint8       `msgpack:"v"`
	Settings DFSSettings `msgpack:"settings"`
	Clock    int64       `msgpack:"clock"`
	// Marks are the queued removal records (absent when none, so a state
	// without them encodes as before).
	Marks []DFSMark `msgpack:"marks,omitempty"`
}
