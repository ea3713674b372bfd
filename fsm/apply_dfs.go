package fsm

import (
	"errors"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// applyDFSConfigure creates, keeps or refuses the cluster's DFS
// configuration. A change of eviction settings, deferral or check interval
// rebuilds the allocator from its own records under the new settings (the
// records carry the current bucket maximum, so SetMaxBuckets survives it);
// a change of the allocator, alignment, unit capacity or shard count is
// refused while any unit exists, and applied to an empty allocator.
func (st *state) applyDFSConfigure(c *DFSConfigure) *DFSResult {
	cfg := c.Settings.Config()
	if err := cfg.Validate(); err != nil {
		return &DFSResult{Err: dfsError("dfs configure", err)}
	}
	if st.dfs == nil {
		a, err := dfsalloc.New(cfg)
		if err != nil {
			return &DFSResult{Err: dfsError("dfs configure", err)}
		}
		st.dfs = &dfsState{settings: c.Settings, alloc: a}
		return &DFSResult{}
	}
	if st.dfs.settings == c.Settings {
		return &DFSResult{}
	}
	old := st.dfs.alloc
	if err := cfg.CompareShared(old.Config()); err != nil {
		// Bucket ids are never reused, so a bucket allocator that ever
		// handed one out cannot be replaced by a fresh one either.
		if stats := old.Stats(); len(stats.Units) > 0 || stats.NextBucketID > 1 {
			return &DFSResult{Err: api.Errorf(api.CodeDFSMismatch, "dfs configure refused: the cluster's allocator holds %d units (next bucket id %d); drain it first: %v", len(stats.Units), stats.NextBucketID, err)}
		}
	}
	a, err := dfsalloc.New(cfg)
	if err != nil {
		return &DFSResult{Err: dfsError("dfs configure", err)}
	}
	if cfg.CompareShared(old.Config()) == nil {
		if err := a.Restore(old.Records()); err != nil {
			return &DFSResult{Err: dfsError("dfs configure", err)}
		}
	}
	st.dfs = &dfsState{settings: c.Settings, alloc: a, clock: st.dfs.clock, marks: st.dfs.marks, markBytes: st.dfs.markBytes}
	return &DFSResult{}
}

func (st *state) dfsOff(op string) *DFSResult {
	return &DFSResult{Err: api.Errorf(api.CodeInvalidParams, "%s: DFS is not configured in this cluster", op)}
}

func (st *state) applyDFSTouch(c *DFSTouch) *DFSResult {
	if st.dfs == nil {
		return st.dfsOff("dfs touch")
	}
	now := st.dfsNow(c.Now)
	for _, r := range c.Refs {
		_ = st.dfs.alloc.Touch(r.Key, r.Desc, now) // a ref evicted or freed meanwhile is ignored
	}
	return &DFSResult{}
}

// applyDFSEvict re-validates the leader's plan: an entry goes only if its
// key's COMPLETE incarnation names exactly that descriptor and no put of
// the key is in flight.
func (st *state) applyDFSEvict(c *DFSEvict) *DFSResult {
	if st.dfs == nil {
		return st.dfsOff("dfs evict")
	}
	check := func(ref dfsalloc.EntryRef) bool {
		e := st.objects.get(ref.Key)
		return e.pending == nil && hasDFS(e.complete, ref.Desc)
	}
	evicted, err := st.dfs.alloc.ApplyEviction(c.Plan, st.dfsNow(c.Now), check)
	if err != nil {
		return &DFSResult{Err: dfsError("dfs evict", err)}
	}
	return &DFSResult{Dropped: evicted, ObjectsLost: st.dropDFSEntries(evicted)}
}

func (st *state) applyDFSFileOp(c *DFSFileOp) *DFSResult {
	if st.dfs == nil {
		return st.dfsOff("dfs file op")
	}
	var err error
	switch {
	case c.Kind == dfsalloc.FileCreate && c.OK:
		err = st.dfs.alloc.ConfirmFileCreated(c.Unit)
	case c.Kind == dfsalloc.FileDelete && c.OK:
		err = st.dfs.alloc.ConfirmFileDeleted(c.Unit)
	case c.Kind == dfsalloc.FileDelete:
		err = st.dfs.alloc.FileDeleteFailed(c.Unit, st.dfsNow(c.Now))
	case c.Kind == dfsalloc.FileCreate:
		return &DFSResult{} // a failed create stays needed; the leader retries
	default:
		err = api.Errorf(api.CodeInvalidParams, "unknown file op kind %d", c.Kind)
	}
	return &DFSResult{Err: dfsError("dfs file op", err)}
}

func (st *state) applyDFSSetMaxBuckets(c *DFSSetMaxBuckets) *DFSResult {
	if st.dfs == nil {
		return st.dfsOff("dfs set-max-buckets")
	}
	return &DFSResult{Err: dfsError("dfs set-max-buckets", st.dfs.alloc.SetMaxBuckets(c.Max))}
}

func (st *state) applyDFSMarkLost(c *DFSMarkLost) *DFSResult {
	if st.dfs == nil {
		return st.dfsOff("dfs mark-lost")
	}
	lost, err := st.dfs.alloc.MarkLost(c.Unit, st.dfsNow(c.Now))
	if err != nil {
		return &DFSResult{Err: dfsError("dfs mark-lost", err)}
	}
	return &DFSResult{Dropped: lost, ObjectsLost: st.dropDFSEntries(lost)}
}

// allocateDFS fills in the descriptors of the DFS replicas that ask for
// space (a DFS replica without a descriptor), as one atomic batch. It is
// called after every other check of the PutStart passed, so a successful
// allocation is never followed by a rejection.
func (st *state) allocateDFS(key string, size int64, rs []api.ReplicaDescriptor, now int64) ([]api.ReplicaDescriptor, *api.Error) {
	var batch []dfsalloc.Request
	for _, r := range rs {
		if r.Kind == api.ReplicaDFS && r.DFS == nil {
			batch = append(batch, dfsalloc.Request{Key: key, Size: size})
		}
	}
	if len(batch) == 0 {
		return rs, nil
	}
	descs, err := st.dfs.alloc.Allocate(batch, st.dfsNow(now))
	if err != nil {
		return nil, dfsError("put "+key+": dfs allocate", err)
	}
	out, _ := withDescriptors(rs, descs, 0)
	return out, nil
}

// commitDFS commits the pending incarnation's DFS entries (PutEnd).
func (st *state) commitDFS(key string, o *object, now int64) *api.Error {
	if st.dfs == nil {
		return nil
	}
	for _, d := range dfsReplicasOf(o) {
		if err := st.dfs.alloc.Commit(key, d, st.dfsNow(now)); err != nil {
			if errors.Is(err, dfsalloc.ErrUnknownEntry) {
				return api.Errorf(api.CodeObjectNotFound, "put %q: its DFS space in %s is gone (unit lost): %v", key, d.Path, err)
			}
			return dfsError("put "+key+": dfs commit", err)
		}
	}
	return nil
}
