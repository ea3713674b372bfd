package fsm

import (
	"errors"
	"slices"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// applyRebuildBegin starts, resumes or finishes a rebuild
// (command_rebuild.go says when each is accepted).
func (st *state) applyRebuildBegin(c *RebuildBegin) *RebuildBeginResult {
	fail := func(format string, args ...any) *RebuildBeginResult {
		return &RebuildBeginResult{Err: api.Errorf(api.CodeInvalidParams, format, args...), ClusterID: st.clusterID, IncBase: st.incBase}
	}
	if c.ClusterID == 0 || c.IncFloor == 0 {
		return fail("rebuild begin: cluster id %016x and incarnation floor %d must both be non-zero", c.ClusterID, c.IncFloor)
	}
	for i, s := range c.Segments {
		if s.Segment == "" {
			return fail("rebuild begin: segment %d has no id", i)
		}
		for _, p := range c.Segments[:i] {
			if p.Segment == s.Segment {
				return fail("rebuild begin: segment %s named twice", s.Segment)
			}
		}
	}
	repeat := st.rebuildCluster != 0
	switch {
	case st.rebuildClosed:
		return &RebuildBeginResult{Err: st.windowClosedErr("rebuild begin"), ClusterID: st.clusterID, IncBase: st.incBase, Repeat: true, Finished: true}
	case repeat && c.ClusterID != st.rebuildCluster:
		return fail("rebuild begin: this cluster rebuilds cluster %016x, not %016x", st.rebuildCluster, c.ClusterID)
	case !repeat && (st.objects.completeCount() != 0 || st.objects.pendingCount() != 0 || st.reg.len() != 0):
		return fail("rebuild begin: the state is not fresh (%d objects, %d puts in progress, %d delete tasks); a rebuild needs a newly bootstrapped, empty cluster",
			st.objects.completeCount(), st.objects.pendingCount(), st.reg.len())
	case !repeat && c.Finish:
		return fail("rebuild finish: no rebuild has begun")
	}
	// A scanned segment's holder may mount once the cluster id is the
	// lost one's: before the first finish the id itself keeps it out, but
	// on a cluster that already serves the rebuilt table (a rerun adopting
	// a late holder) only the finishing begin, sent after its copies were
	// adopted, admits it, so it never reconciles against a table that
	// lacks them.
	member := c.Finish || st.clusterID != c.ClusterID
	serving := repeat && st.clusterID == st.rebuildCluster
	st.rebuildCluster = c.ClusterID
	if !serving {
		// Once the table is served, the base stays: the first rebuild's
		// margin already covers every copy of the lost cluster, and a
		// copy above the base is one this cluster issued, whose fate its
		// own table decides, never a rerun's scan.
		st.incBase = max(st.incBase, c.IncFloor)
		st.rebuildBase = max(st.rebuildBase, c.IncFloor)
	}
	added := 0
	for _, s := range c.Segments {
		if seg := st.segments[s.Segment]; seg != nil {
			// Known: mounted already, or registered by an earlier begin.
			if member && !seg.retired && !seg.rebuildMember {
				seg.rebuildMember = true
				st.segGen++
			}
			continue
		}
		id := api.SegmentID(st.intern(string(s.Segment)))
		st.segments[id] = &segment{id: id, pool: st.intern(s.Pool), caps: normalizeCaps(s.Capabilities), rebuildMember: member}
		st.segGen++
		added++
	}
	if c.Finish {
		st.clusterID = c.ClusterID
	}
	return &RebuildBeginResult{ClusterID: st.clusterID, IncBase: st.incBase, Repeat: repeat, SegmentsAdded: added, Finished: st.clusterID == st.rebuildCluster}
}

// applyRebuildAdopt adopts objects and creates delete tasks, item by item.
func (st *state) applyRebuildAdopt(c *RebuildAdopt) *RebuildAdoptResult {
	if st.rebuildCluster == 0 {
		return &RebuildAdoptResult{Err: api.Errorf(api.CodeInvalidParams, "rebuild adopt: no rebuild has begun in this cluster")}
	}
	if c.ClusterID != st.rebuildCluster {
		return &RebuildAdoptResult{Err: api.Errorf(api.CodeInvalidParams, "rebuild adopt: entry is for cluster %016x, this cluster rebuilds %016x", c.ClusterID, st.rebuildCluster)}
	}
	if st.rebuildClosed {
		return &RebuildAdoptResult{Err: st.windowClosedErr("rebuild adopt")}
	}
	res := &RebuildAdoptResult{
		Objects: make([]RebuildItemResult, len(c.Objects)),
		Deletes: make([]RebuildItemResult, len(c.Deletes)),
	}
	for i := range c.Objects {
		res.Objects[i] = st.adoptObject(&c.Objects[i], c.Now)
	}
	for i := range c.Deletes {
		res.Deletes[i] = st.adoptDelete(&c.Deletes[i], c.Now)
	}
	return res
}

// checkRebuildInc refuses an incarnation the rebuild may not name: zero
// (legacy, cannot be told apart from another legacy copy) or above the
// rebuild's base (it could equal one this cluster issues).
func (st *state) checkRebuildInc(key string, inc api.ObjectIncarnation) *api.Error {
	if err := api.ValidKey(key); err != nil {
		return api.AsError(err)
	}
	if inc.IsZero() {
		return api.Errorf(api.CodeInvalidParams, "rebuild %q: legacy (zero) incarnation cannot be adopted", key)
	}
	if inc.Low > st.rebuildBase {
		return api.Errorf(api.CodeInvalidParams, "rebuild %q: incarnation %s is above the rebuild's incarnation base %d: a copy this cluster issued, which its own table decides", key, inc, st.rebuildBase)
	}
	return nil
}

func (st *state) adoptObject(o *RebuildObject, now int64) RebuildItemResult {
	failed := func(err *api.Error) RebuildItemResult { return RebuildItemResult{Err: err} }
	if err := st.checkRebuildInc(o.Key, o.Incarnation); err != nil {
		return failed(err)
	}
	if o.Size < 0 {
		return failed(api.Errorf(api.CodeInvalidParams, "rebuild %q: negative size %d", o.Key, o.Size))
	}
	if err := st.rebuildReplicasValid(o.Key, o.Replicas); err != nil {
		return failed(err)
	}
	adopted := st.newObject(o.Tenant, "", o.Replicas, o.Size, now, o.Incarnation)
	old := st.objects.get(o.Key)
	e := old
	absent := e.complete == nil && e.pending == nil
	if absent && st.rebuildOverflow {
		return failed(api.Errorf(api.CodeInvalidParams, "rebuild %q: more than %d keys were removed since the rebuild began, so this cluster no longer knows whether %q was one of them; the copy is not adopted: retire the late holder (operator retire) or wipe it", o.Key, maxRebuildRemoved, o.Key))
	}
	switch {
	case e.complete != nil && e.complete.inc == o.Incarnation:
		// The table's DFS replica (if any) stays the one: a second one's
		// range is left to the allocator's free space.
		have := e.complete.replicas()
		merged := mergeReplicas(have, o.Replicas)
		if dfsReplicaIn(have) == nil && dfsReplicaIn(merged) != nil {
			if err := st.adoptDFS(o.Key, merged, now); err != nil {
				return failed(err)
			}
		}
		if len(merged) != len(e.complete.replicas()) {
			e.complete = st.withReplicas(e.complete, merged)
			st.objects.set(o.Key, old, e)
		}
		return RebuildItemResult{Outcome: RebuildAlready}
	case e.pending != nil && e.pending.inc == o.Incarnation:
		// A put in flight (a rebuild rerun on a serving cluster): its
		// copies are the put's own, never delete them.
		return RebuildItemResult{Outcome: RebuildAlready}
	case e.complete != nil && o.Incarnation.Less(e.complete.inc),
		taskAt(e.tasks, o.Incarnation),
		e.complete == nil && st.removedSinceRebuild(o.Key):
		// A newer incarnation is the table's value, or this very
		// incarnation must go (the rebuild found it tombstoned elsewhere
		// or older than the winner, and its delete has not reached every
		// holder yet), or the key was removed since the rebuild began:
		// this copy must go, never become visible again. A newer put in
		// flight, or a task of a newer incarnation, is no such evidence: the
		// put may be revoked, and a revoked put's task must not cost an
		// acknowledged value; a put that ends supersedes this copy as any
		// PutEnd does.
		plan, err := st.planFitting(o.Key, e, adopted)
		if err != nil {
			return failed(err)
		}
		n := st.createTasks(&e, plan, adopted.tenant(), now)
		st.objects.set(o.Key, old, e)
		if n == 0 {
			return RebuildItemResult{Outcome: RebuildAlready}
		}
		return RebuildItemResult{Outcome: RebuildSuperseded, Tasks: n}
	case e.pending != nil && e.pending.inc.Less(o.Incarnation):
		return failed(api.Errorf(api.CodeObjectAlreadyExists, "rebuild %q: put %s in progress is older than %s", o.Key, e.pending.inc, o.Incarnation))
	}
	// The adopted incarnation may be newer than a COMPLETE one in the
	// table (a resumed rebuild saw a holder the first pass did not): it
	// supersedes it as a PutEnd does.
	plan, err := st.supersedePlan(o.Key, e)
	if err != nil {
		return failed(err)
	}
	if err := st.adoptDFS(o.Key, o.Replicas, now); err != nil {
		return failed(err)
	}
	created := st.supersede(o.Key, &e, plan, now)
	e.complete = adopted
	st.objects.set(o.Key, old, e)
	return RebuildItemResult{Outcome: RebuildAdopted, Tasks: created}
}

// rebuildReplicasValid: at least one; LOCAL_DISK ones each on a known,
// not retired segment (registered by RebuildBegin), no segment twice; at
// most one DFS replica, with a descriptor, in a cluster with DFS
// configured (its range is checked by the allocator's Adopt).
func (st *state) rebuildReplicasValid(key string, rs []api.ReplicaDescriptor) *api.Error {
	if len(rs) == 0 {
		return api.Errorf(api.CodeInvalidParams, "rebuild %q: no replicas", key)
	}
	dfs := 0
	for i, r := range rs {
		if r.Kind == api.ReplicaDFS {
			switch {
			case r.DFS == nil || r.Segment != "":
				return api.Errorf(api.CodeInvalidParams, "rebuild %q: DFS replica %d needs a descriptor and no segment", key, i)
			case st.dfs == nil:
				return api.Errorf(api.CodeInvalidParams, "rebuild %q: DFS replica %d, but DFS is not configured in this cluster: start its masters with the lost cluster's MOONCAKE_DFS_* settings", key, i)
			}
			if dfs++; dfs > 1 {
				return api.Errorf(api.CodeInvalidParams, "rebuild %q: more than one DFS replica (a rebuild adopts one)", key)
			}
			continue
		}
		if r.Kind != api.ReplicaLocalDisk || r.DFS != nil {
			return api.Errorf(api.CodeInvalidParams, "rebuild %q: replica %d is neither a LOCAL_DISK nor a DFS replica", key, i)
		}
		seg := st.segments[r.Segment]
		switch {
		case seg == nil:
			return api.Errorf(api.CodeSegmentNotFound, "rebuild %q: replica %d on unknown segment %s", key, i, r.Segment)
		case seg.retired:
			return api.Errorf(api.CodeInvalidParams, "rebuild %q: replica %d on retired segment %s", key, i, r.Segment)
		}
		for _, p := range rs[:i] {
			if p.Kind == api.ReplicaLocalDisk && p.Segment == r.Segment {
				return api.Errorf(api.CodeInvalidParams, "rebuild %q: two replicas on segment %s", key, r.Segment)
			}
		}
	}
	return nil
}

// adoptDFS registers the DFS replica of rs (if any) in the allocator as a
// committed entry of key, so no later allocation overlaps its bytes. It
// changes nothing when it fails.
func (st *state) adoptDFS(key string, rs []api.ReplicaDescriptor, now int64) *api.Error {
	for _, r := range rs {
		if r.Kind == api.ReplicaDFS && r.DFS != nil {
			if err := st.dfs.alloc.Adopt(key, *r.DFS, st.dfsNow(now)); err != nil {
				e := dfsError("rebuild "+key+": adopt its DFS range", err)
				if errors.Is(err, dfsalloc.ErrDescriptorMismatch) {
					// Another adopted object holds part of the range: the
					// operator's input, not this cluster's fault.
					e.Code = api.CodeInvalidParams
				}
				return e
			}
		}
	}
	return nil
}

// dfsReplica returns the DFS replica of rs, or nil.
func dfsReplicaIn(rs []api.ReplicaDescriptor) *api.ReplicaDescriptor {
	for i := range rs {
		if rs[i].Kind == api.ReplicaDFS {
			return &rs[i]
		}
	}
	return nil
}

// mergeReplicas returns have plus the replicas of add on segments have
// does not name (have itself when there are none).
func mergeReplicas(have, add []api.ReplicaDescriptor) []api.ReplicaDescriptor {
	out := have
	for _, r := range add {
		if !slices.ContainsFunc(out, func(h api.ReplicaDescriptor) bool { return h.Kind == r.Kind && h.Segment == r.Segment }) {
			if len(out) == len(have) {
				out = slices.Clone(have)
			}
			out = append(out, r)
		}
	}
	if len(out) > api.MaxReplicas {
		return have
	}
	return out
}

func (st *state) adoptDelete(d *RebuildDelete, now int64) RebuildItemResult {
	failed := func(err *api.Error) RebuildItemResult { return RebuildItemResult{Err: err} }
	if err := st.checkRebuildInc(d.Key, d.Incarnation); err != nil {
		return failed(err)
	}
	seg := st.segments[d.Segment]
	switch {
	case seg == nil:
		return failed(api.Errorf(api.CodeSegmentNotFound, "rebuild delete %q: unknown segment %s", d.Key, d.Segment))
	case seg.retired:
		return failed(api.Errorf(api.CodeInvalidParams, "rebuild delete %q: segment %s is retired", d.Key, d.Segment))
	case !seg.capable():
		return failed(api.Errorf(api.CodeInvalidParams, "rebuild delete %q: segment %s does not advertise %s", d.Key, d.Segment, api.CapObjectTombstoneV1))
	}
	old := st.objects.get(d.Key)
	e := old
	if e.complete != nil && e.complete.inc == d.Incarnation && onSegment(e.complete, seg.id) {
		return failed(api.Errorf(api.CodeInvalidParams, "rebuild delete %q %s on %s: that copy is the key's adopted replica", d.Key, d.Incarnation, seg.id))
	}
	id := taskIdent{seg: seg.id, key: d.Key, inc: d.Incarnation}
	if hasIn(e.tasks, id) {
		return RebuildItemResult{Outcome: RebuildAlready}
	}
	if !st.reg.fits(1) {
		return failed(registryFull(d.Key, 1, st.reg.len(), st.reg.capacity))
	}
	tenant := d.Tenant
	if tenant == "" {
		tenant = api.DefaultTenant
	}
	n := st.createTasks(&e, taskPlan{id}, st.intern(tenant), now)
	st.objects.set(d.Key, old, e)
	return RebuildItemResult{Outcome: RebuildAdopted, Tasks: n}
}

// taskAt reports whether any pending task of the key names inc.
func taskAt(head *task, inc api.ObjectIncarnation) bool {
	for t := head; t != nil; t = t.keyNext {
		if t.inc == inc {
			return true
		}
	}
	return false
}
