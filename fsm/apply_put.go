package fsm

import (
	"sexton/api"
)

// noReplicasMessage is the refusal of a PutStart without replicas. The
// leader proposes a sessioned put it could not place that way, so this
// refusal, stored in the session table, means "the leader could not place
// it" (see IsUnplaced).
const noReplicasMessage = "put: no replicas"

// IsUnplaced reports whether e is the refusal of a PutStart (or a
// PutStartBatch item) proposed without replicas: the leader found no
// placement for it. The leader answers it, first time and repeat alike,
// with its placement error, which depends on the request only.
func IsUnplaced(e *api.Error) bool {
	return e != nil && e.Code == api.CodeInvalidParams && e.Message == noReplicasMessage
}

// validReplicas checks a PutStart's placement: 1..MaxReplicas replicas,
// LOCAL_DISK ones on known, mounted, non-retired segments with no segment
// twice, DFS ones with a descriptor.
func (st *state) validReplicas(rs []api.ReplicaDescriptor) *api.Error {
	if len(rs) == 0 {
		return &api.Error{Code: api.CodeInvalidParams, Message: noReplicasMessage}
	}
	for i, r := range rs {
		switch r.Kind {
		case api.ReplicaLocalDisk:
			seg := st.segments[r.Segment]
			switch {
			case r.Segment == "":
				return api.Errorf(api.CodeInvalidParams, "put: replica %d names no segment", i)
			case seg == nil:
				return api.Errorf(api.CodeSegmentNotFound, "put: replica %d on unknown segment %s", i, r.Segment)
			case seg.retired:
				return api.Errorf(api.CodeInvalidParams, "put: replica %d on retired segment %s", i, r.Segment)
			case !seg.mounted:
				return api.Errorf(api.CodeInvalidParams, "put: replica %d on unmounted segment %s", i, r.Segment)
			}
			for _, p := range rs[:i] {
				if p.Kind == api.ReplicaLocalDisk && p.Segment == r.Segment {
					return api.Errorf(api.CodeInvalidParams, "put: two replicas on segment %s", r.Segment)
				}
			}
		case api.ReplicaDFS:
			// The allocator in the state places DFS replicas; a descriptor
			// chosen elsewhere could overlap live data.
			if r.DFS != nil {
				return api.Errorf(api.CodeInvalidParams, "put: DFS replica %d carries a descriptor; DFS space is allocated by the state", i)
			}
			if st.dfs == nil {
				return api.Errorf(api.CodeInvalidParams, "put: DFS replica %d, but DFS is not configured in this cluster", i)
			}
		default:
			return api.Errorf(api.CodeInvalidParams, "put: replica %d has unknown kind %d", i, r.Kind)
		}
	}
	return nil
}

// applyPutStart creates a PENDING incarnation {cluster id, index}. Reads
// keep returning the key's COMPLETE incarnation until PutEnd.
func (st *state) applyPutStart(index uint64, c *PutStart) *PutStartResult {
	if err := st.checkPutStart(&c.PutStartItem); err != nil {
		return &PutStartResult{Err: err}
	}
	replicas, aerr := st.allocateDFS(c.Key, c.Size, c.Replicas, c.Now)
	if aerr != nil {
		return &PutStartResult{Err: aerr}
	}
	return st.recordPending(index, &c.PutStartItem, replicas, c.Now)
}

// checkPutStart is every check of a PutStart except the DFS allocation.
func (st *state) checkPutStart(c *PutStartItem) *api.Error {
	if err := api.ValidKey(c.Key); err != nil {
		return api.AsError(err)
	}
	if c.Size < 0 {
		return api.Errorf(api.CodeInvalidParams, "put %q: negative size %d", c.Key, c.Size)
	}
	if err := st.validReplicas(c.Replicas); err != nil {
		return err
	}
	e := st.objects.get(c.Key)
	if e.pending != nil {
		return api.Errorf(api.CodeObjectAlreadyExists, "put %q: put in progress (%s)", c.Key, e.pending.inc)
	}
	if c.IfAbsent && e.complete != nil {
		return api.Errorf(api.CodeObjectAlreadyExists, "put %q: key exists (%s)", c.Key, e.complete.inc)
	}
	return nil
}

// recordPending makes a checked, allocated put the key's PENDING
// incarnation {cluster id, index}.
func (st *state) recordPending(index uint64, c *PutStartItem, replicas []api.ReplicaDescriptor, now int64) *PutStartResult {
	old := st.objects.get(c.Key)
	e := old
	inc := st.incarnationAt(index)
	e.pending = st.newObject(c.Tenant, c.PutID, replicas, c.Size, now, inc)
	st.objects.set(c.Key, old, e)
	return &PutStartResult{Incarnation: inc, Replicas: e.pending.replicas()}
}

// applyPutEnd makes the pending incarnation visible. The incarnation it
// supersedes gets delete tasks first; if they do not fit, nothing changes
// and the put stays pending. A prefix-delete job that started while the
// put was in progress keeps the key (jobTable.notePutEnd).
func (st *state) applyPutEnd(c *PutEnd) *PutEndResult {
	old := st.objects.get(c.Key)
	e := old
	if e.pending == nil || e.pending.inc != c.Incarnation {
		return &PutEndResult{Err: noPending(c.Key, c.Incarnation, e)}
	}
	plan, err := st.supersedePlan(c.Key, e)
	if err != nil {
		return &PutEndResult{Err: err}
	}
	if err := st.commitDFS(c.Key, e.pending, c.Now); err != nil {
		return &PutEndResult{Err: err}
	}
	created := st.supersede(c.Key, &e, plan, c.Now)
	e.complete, e.pending = e.pending, nil
	st.objects.set(c.Key, old, e)
	st.jobs.notePutEnd(c.Key, c.Incarnation)
	return &PutEndResult{TasksCreated: created}
}

// supersedePlan plans the delete tasks of e's COMPLETE incarnation, which
// a newer one is about to replace (none without one): refused, nothing
// changed, when they do not fit the registry or its DFS marks the queue.
func (st *state) supersedePlan(key string, e entry) (taskPlan, *api.Error) {
	prev := e.complete
	if prev == nil {
		return taskPlan{}, nil
	}
	plan, err := st.planFitting(key, e, prev)
	if err == nil {
		err = st.dfsMarksFit(key, prev)
	}
	return plan, err
}

// supersede creates the tasks supersedePlan planned for e's COMPLETE
// incarnation and returns how many. Its DFS record is killed (this
// incarnation only) before its range is freed (DFSMarked): a rebuild never
// brings the overwritten value back, whatever becomes of the newer one.
func (st *state) supersede(key string, e *entry, plan taskPlan, now int64) int {
	prev := e.complete
	if prev == nil {
		return 0
	}
	n := st.createTasks(e, plan, prev.tenant(), now)
	st.queueDFSMarks(key, prev, false)
	return n
}

// applyPutRevoke abandons the pending incarnation. Its replicas may hold
// bytes the client already wrote, so they get delete tasks like a Remove.
func (st *state) applyPutRevoke(c *PutRevoke) *PutEndResult {
	old := st.objects.get(c.Key)
	e := old
	if e.pending == nil || e.pending.inc != c.Incarnation {
		return &PutEndResult{Err: noPending(c.Key, c.Incarnation, e)}
	}
	plan, err := st.planFitting(c.Key, e, e.pending)
	if err != nil {
		return &PutEndResult{Err: err}
	}
	if err := st.dfsMarksFit(c.Key, e.pending); err != nil {
		return &PutEndResult{Err: err}
	}
	created := st.createTasks(&e, plan, e.pending.tenant(), c.Now)
	// The client may have written the put record before the put failed:
	// the mark kills this incarnation only, never an older acknowledged
	// one, and the range is freed by DFSMarked once it is durable.
	st.queueDFSMarks(c.Key, e.pending, false)
	e.pending = nil
	st.objects.set(c.Key, old, e)
	return &PutEndResult{TasksCreated: created}
}

func noPending(key string, inc api.ObjectIncarnation, e entry) *api.Error {
	if e.pending == nil {
		return api.Errorf(api.CodeObjectNotFound, "key %q has no put in progress (asked for %s)", key, inc)
	}
	return api.Errorf(api.CodeObjectNotFound, "key %q: put in progress is %s, not %s", key, e.pending.inc, inc)
}
