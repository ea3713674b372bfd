package fsm

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"sexton/fsm/internal/btree"

	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/snapshot"
)

// View is a frozen copy of the state, taken between two Applies. Taking it
// costs two B-tree clones plus a copy of the segments and task pointers;
// the objects are in the clones of the object table's trees
// (objectTable.clone), copy-on-write with the live state, so writing the
// view out does not hold the FSM's lock.
type View struct {
	header   snapshot.Header
	complete *btree.BTreeG[completeItem] // nil once released
	pending  *btree.BTreeG[pendingRef]
	segments []snapshot.Segment
	tasks    []*task
	state    snapshot.State
	sessions []sessionView
	jobs     []api.JobInfo
	dfs      *dfsSectionHead // nil: no DFS configured, no dfs_buckets section
	dfsRecs  []dfsalloc.Record
}

// Snapshot freezes the current state. It is cheap (no object is copied) and
// must be called between Applies, like hashicorp/raft's FSM.Snapshot.
func (f *FSM) Snapshot() *View {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	v := &View{
		header: snapshot.Header{
			Format: snapshot.Format140, ClusterID: st.clusterID,
			LastIndex: st.appliedIndex, LastTerm: st.appliedTerm, Created: st.lastNow,
		},
		segments: make([]snapshot.Segment, 0, len(st.segments)),
		tasks:    make([]*task, 0, st.reg.len()),
		state: snapshot.State{
			MasterEpoch: st.masterEpoch, NextTaskID: st.nextTaskID,
			LeaderID: st.leaderID, LeaderAddr: st.leaderAddr, LastNow: st.lastNow,
			Audit:    slices.Clone(st.audit),
			GrantKey: slices.Clone(st.grantKey), SessionClock: st.sess.clock,
			IncBase: st.incBase, RebuildCluster: st.rebuildCluster,
			RebuildClosed: st.rebuildClosed, RebuildRemoved: st.removedBytes(), RebuildOverflow: st.rebuildOverflow,
			IncBlocks: st.blockRecords(), RebuildBase: st.rebuildBase,
		},
		sessions: st.sess.views(),
	}
	v.complete, v.pending = st.objects.clone()
	for _, j := range st.jobs.jobs {
		rec := *j
		rec.Kept = st.jobs.keptList(j.ID)
		v.jobs = append(v.jobs, rec)
	}
	if st.settingsSet {
		set := st.settings
		v.state.Settings = &set
	} else if st.settings != (api.Settings{}) {
		// Legacy settings travel with the state, so a node restoring it
		// applies what follows as the node that wrote it did.
		legacy := st.settings
		v.state.Legacy = &legacy
	}
	for _, s := range st.segments {
		v.segments = append(v.segments, snapshot.Segment{
			ID: s.id, ClientID: s.client, Pool: s.pool, Capacity: s.capacity,
			Capabilities: s.caps, Endpoint: s.endpoint, MountEpoch: s.epoch,
			Mounted: s.mounted, Retired: s.retired, Process: s.process, RebuildMember: s.rebuildMember,
		})
	}
	st.reg.byID.ascend(func(t *task) bool { v.tasks = append(v.tasks, t); return true })
	if st.dfs != nil {
		// The allocator is not copy-on-write: its records are copied here,
		// under the lock (about 0.3 µs per entry).
		v.dfs = &dfsSectionHead{V: dfsSectionV1, Settings: st.dfs.settings, Clock: st.dfs.clock, Marks: slices.Clone(st.dfs.marks)}
		v.dfsRecs = st.dfs.alloc.Records()
	}
	return v
}

// Release drops the view's references. The live state does not wait for
// it: an index node shared with a released view is still copied once on
// its next write, which is cheap.
func (v *View) Release() {
	v.complete, v.pending = nil, nil
	v.segments, v.tasks, v.sessions, v.dfsRecs, v.jobs = nil, nil, nil, nil, nil
}

// WriteTo writes the view as a 1.4.0 snapshot stream. Equal states give
// equal bytes: objects by key (a key's COMPLETE before its PENDING),
// segments by id, the one State record, tasks by id, session records by
// (client id, seq), jobs by id.
func (v *View) WriteTo(w io.Writer) (int64, error) { return v.writeFormat(w, snapshot.Format140) }

// keyed is one key with its object incarnations (not its tasks, which
// are written from the task section), as the trees' clones give them.
// The incarnations are valid during the call they are passed to only.
type keyed struct {
	key               string
	complete, pending *object
}

// eachInOrder calls fn with every key the view holds an incarnation of,
// in key order, with its COMPLETE and PENDING incarnations. It walks the
// clone of the COMPLETE keys' index and merges in the PENDING
// incarnations, taken from the clone of the puts-in-progress index and
// sorted by key: puts in flight are few next to the objects, so that is
// all it sorts.
func (v *View) eachInOrder(fn func(keyed) error) error {
	pending := make([]pendingRef, 0, v.pending.Len())
	v.pending.Ascend(func(p pendingRef) bool {
		pending = append(pending, p)
		return true
	})
	slices.SortFunc(pending, func(a, b pendingRef) int { return strings.Compare(a.key, b.key) })
	var err error
	var cur object // the incarnation fn sees: one copy, reused
	v.complete.Ascend(func(c completeItem) bool {
		for len(pending) > 0 && pending[0].key < c.key {
			if err = fn(keyed{key: pending[0].key, pending: pending[0].obj}); err != nil {
				return false
			}
			pending = pending[1:]
		}
		cur = c.obj
		ke := keyed{key: c.key, complete: &cur}
		if len(pending) > 0 && pending[0].key == c.key {
			ke.pending = pending[0].obj
			pending = pending[1:]
		}
		err = fn(ke)
		return err == nil
	})
	for _, p := range pending {
		if err != nil {
			break
		}
		err = fn(keyed{key: p.key, pending: p.obj})
	}
	return err
}

func (v *View) writeObjects(sw *snapshot.Writer) error {
	if err := sw.BeginSection(snapshot.SectionMetadata); err != nil {
		return err
	}
	var rec snapshot.Object
	err := v.eachInOrder(func(ke keyed) error {
		for _, o := range [2]*object{ke.complete, ke.pending} {
			if o == nil {
				continue
			}
			state := snapshot.ObjectComplete
			if o == ke.pending {
				state = snapshot.ObjectPending
			}
			rec = snapshot.Object{
				Key: ke.key, Tenant: o.tenant(), Size: o.size, Incarnation: o.inc, State: state,
				Created: o.created, PutID: o.putID(), Replicas: o.replicas(),
			}
			if err := sw.WriteRecord(&rec); err != nil {
				return fmt.Errorf("fsm: snapshot object %q: %w", ke.key, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return sw.EndSection()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
