package fsm

import (
	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// applyPutStartBatch starts every item that passes PutStart's checks. The
// DFS space of all passing items is one dfsalloc batch: if it fails, every
// DFS-carrying item fails with that error and none of them changes
// anything (the allocator's batch is atomic); items with LOCAL_DISK
// replicas only are independent of it. Items are checked against the state
// before the batch, which is exact because no key appears twice.
func (st *state) applyPutStartBatch(index uint64, c *PutStartBatch) *PutStartBatchResult {
	if k, dup := DuplicateBatchKey(len(c.Items), func(i int) string { return c.Items[i].Key }); dup {
		return &PutStartBatchResult{Err: api.Errorf(api.CodeInvalidParams, "put batch names key %q twice", k)}
	}
	out := &PutStartBatchResult{Items: make([]PutStartResult, len(c.Items))}
	var reqs []dfsalloc.Request
	for i := range c.Items {
		it := &c.Items[i]
		if err := st.checkPutStart(it); err != nil {
			out.Items[i].Err = err
			continue
		}
		for _, r := range it.Replicas {
			if r.Kind == api.ReplicaDFS && r.DFS == nil {
				reqs = append(reqs, dfsalloc.Request{Key: it.Key, Size: it.Size})
			}
		}
	}
	var descs []api.DFSDescriptor
	var allocErr *api.Error
	if len(reqs) > 0 {
		var err error
		if descs, err = st.dfs.alloc.Allocate(reqs, st.dfsNow(c.Now)); err != nil {
			allocErr = dfsError("put batch: dfs allocate", err)
		}
	}
	next := 0
	for i := range c.Items {
		it := &c.Items[i]
		if out.Items[i].Err != nil {
			continue
		}
		replicas := it.Replicas
		if needsDFS(replicas) {
			if allocErr != nil {
				out.Items[i].Err = allocErr
				continue
			}
			replicas, next = withDescriptors(replicas, descs, next)
		}
		out.Items[i] = *st.recordPending(index, it, replicas, c.Now)
	}
	return out
}

// applyPutEndBatch is one PutEnd per item, in order.
func (st *state) applyPutEndBatch(c *PutEndBatch) *PutEndBatchResult {
	out := &PutEndBatchResult{Items: make([]PutEndResult, len(c.Items))}
	for i, it := range c.Items {
		out.Items[i] = *st.applyPutEnd(&PutEnd{V: PutEndV1, Key: it.Key, Incarnation: it.Incarnation, Now: c.Now})
	}
	return out
}

// needsDFS reports whether rs has a DFS replica the state must allocate.
func needsDFS(rs []api.ReplicaDescriptor) bool {
	for _, r := range rs {
		if r.Kind == api.ReplicaDFS && r.DFS == nil {
			return true
		}
	}
	return false
}

// withDescriptors returns a copy of rs whose unallocated DFS replicas take
// descs[next:] in order, and the next unused index.
func withDescriptors(rs []api.ReplicaDescriptor, descs []api.DFSDescriptor, next int) ([]api.ReplicaDescriptor, int) {
	out := make([]api.ReplicaDescriptor, len(rs))
	copy(out, rs)
	for i := range out {
		if out[i].Kind == api.ReplicaDFS && out[i].DFS == nil {
			d := descs[next]
			out[i].DFS = &d
			next++
		}
	}
	return out, next
}
