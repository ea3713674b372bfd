package fsm

import (
	"strings"

	"sexton/api"
	"sexton/snapshot"
)

// incBlock is a live reserved incarnation block: Lows lo..hi of the
// cluster's incarnations, committable while the fsm's time is before
// expires.
type incBlock struct {
	lo, hi  uint64
	expires int64
}

// fsmTime is the fsm's time at a command carrying now: the largest now
// applied so far, so it never goes back when a leader's clock is behind
// an earlier one's.
func (st *state) fsmTime(now int64) int64 { return max(st.sess.clock, now) }

// expireBlocks drops the blocks whose expiry the fsm's time reached; no
// incarnation of theirs can commit any more.
func (st *state) expireBlocks(now int64) {
	n := 0
	for _, b := range st.blocks {
		if b.expires > now {
			st.blocks[n] = b
			n++
		}
	}
	if n != len(st.blocks) {
		clear(st.blocks[n:])
		st.blocks = st.blocks[:n]
	}
}

// inLiveBlock reports whether inc is an incarnation of a live block.
func (st *state) inLiveBlock(inc api.ObjectIncarnation) bool {
	if inc.High != st.clusterID {
		return false
	}
	for _, b := range st.blocks {
		if b.lo <= inc.Low && inc.Low <= b.hi {
			return true
		}
	}
	return false
}

// applyReserve reserves the block [incBase+index+1, incBase+index+count]
// and raises incBase by count, so every later incarnation is above it.
func (st *state) applyReserve(index uint64, c *ReserveIncarnations) *ReserveResult {
	now := st.fsmTime(c.Now)
	st.expireBlocks(now)
	out := &ReserveResult{Cluster: st.clusterID}
	if c.Count == 0 {
		out.Lo = 1
		return out
	}
	bad := func(format string, args ...any) *ReserveResult {
		return &ReserveResult{Err: api.Errorf(api.CodeInvalidParams, format, args...), Cluster: st.clusterID}
	}
	switch {
	case st.clusterID == 0:
		return bad("reserve incarnations: the cluster has no id yet")
	case c.Count > MaxIncBlockCount:
		return bad("reserve incarnations: %d exceed %d per block", c.Count, MaxIncBlockCount)
	case c.Expires <= now:
		return bad("reserve incarnations: expiry %d is not after the state's time %d", c.Expires, now)
	case c.Expires-c.Now > MaxIncBlockLife:
		return bad("reserve incarnations: a block living %d ns exceeds %d ns", c.Expires-c.Now, MaxIncBlockLife)
	case len(st.blocks) >= MaxIncBlocks:
		return &ReserveResult{Err: api.Errorf(api.CodeUnavailable, "reserve incarnations: %d blocks are live, at most %d; wait for one to expire", len(st.blocks), MaxIncBlocks), Cluster: st.clusterID}
	}
	b := incBlock{lo: st.incBase + index + 1, hi: st.incBase + index + c.Count, expires: c.Expires}
	st.blocks = append(st.blocks, b)
	st.incBase += c.Count
	out.Lo, out.Hi, out.Expires = b.lo, b.hi, b.expires
	return out
}

// stale is PutCommit's refusal of an incarnation that can no longer commit.
func stale(key string, inc api.ObjectIncarnation, why string) *api.Error {
	return api.Errorf(api.CodeIncarnationStale, "put commit %q %s: %s; ask for a new grant and write again", key, inc, why)
}

// applyPutCommit makes a written LOCAL_DISK put COMPLETE in one step: the
// checks of PutStart, then what PutEnd does. Its incarnation must lie in
// a live block and be above every incarnation the key holds, so the
// key's incarnations still rise in the order their puts are acknowledged.
func (st *state) applyPutCommit(c *PutCommit) *PutEndResult {
	fail := func(e *api.Error) *PutEndResult { return &PutEndResult{Err: e} }
	if err := api.ValidKey(c.Key); err != nil {
		return fail(api.AsError(err))
	}
	if c.Size < 0 {
		return fail(api.Errorf(api.CodeInvalidParams, "put commit %q: negative size %d", c.Key, c.Size))
	}
	for i, r := range c.Replicas {
		if r.Kind != api.ReplicaLocalDisk {
			return fail(api.Errorf(api.CodeInvalidParams, "put commit %q: replica %d is not LOCAL_DISK; a DFS put uses PutStart and PutEnd", c.Key, i))
		}
	}
	if err := st.validReplicas(c.Replicas); err != nil {
		return fail(err)
	}
	// The time every command applies anyway (tick), applied first so a
	// block past its expiry at this entry's time cannot commit.
	st.expireBlocks(st.fsmTime(c.Now))
	if !st.inLiveBlock(c.Incarnation) {
		return fail(stale(c.Key, c.Incarnation, "not in a live reserved block (it expired, or was never reserved)"))
	}
	old := st.objects.get(c.Key)
	e := old
	if e.pending != nil {
		return fail(api.Errorf(api.CodeObjectAlreadyExists, "put %q: put in progress (%s)", c.Key, e.pending.inc))
	}
	if c.IfAbsent && e.complete != nil {
		return fail(api.Errorf(api.CodeObjectAlreadyExists, "put %q: key exists (%s)", c.Key, e.complete.inc))
	}
	if e.complete != nil && !e.complete.inc.Less(c.Incarnation) {
		return fail(stale(c.Key, c.Incarnation, "the key holds "+e.complete.inc.String()))
	}
	if t := newestTask(e.tasks); t != nil && !t.inc.Less(c.Incarnation) {
		return fail(stale(c.Key, c.Incarnation, "the key still has copies of "+t.inc.String()+" to delete"))
	}
	if err := st.jobs.keptRoom(c.Key, c.Incarnation); err != nil {
		return fail(err)
	}
	var plan taskPlan
	prev := e.complete
	if prev != nil {
		var err *api.Error
		if plan, err = st.planFitting(c.Key, e, prev); err != nil {
			return fail(err)
		}
	}
	created := 0
	if prev != nil {
		created = st.createTasks(&e, plan, prev.tenant(), c.Now)
	}
	e.complete = st.newObject(c.Tenant, c.PutID, c.Replicas, c.Size, c.Now, c.Incarnation)
	st.objects.set(c.Key, old, e)
	st.jobs.notePutEnd(c.Key, c.Incarnation)
	return &PutEndResult{TasksCreated: created}
}

// newestTask is the last task of a key's list (the list is oldest first).
func newestTask(head *task) *task {
	var last *task
	for t := head; t != nil; t = t.keyNext {
		last = t
	}
	return last
}

// keptRoom refuses a put that would make an active job keep one key more
// than api.MaxJobKeptBytes allows: a one-commit put was never pending, so
// applyJobStart did not count it.
func (t *jobTable) keptRoom(key string, inc api.ObjectIncarnation) *api.Error {
	for _, j := range t.jobs {
		if !j.Active() || !inc.Less(j.Start) || key <= j.Cursor || !strings.HasPrefix(key, j.Prefix) {
			continue
		}
		ks := t.kept[j.ID]
		if ks == nil {
			if api.JobKeptCost(key) > api.MaxJobKeptBytes {
				return api.Errorf(api.CodeUnavailable, "put commit %q: bulk-delete job %d cannot keep one more key; retry after it ends", key, j.ID)
			}
			continue
		}
		if _, had := ks.inc[key]; !had && ks.bytes+api.JobKeptCost(key) > api.MaxJobKeptBytes {
			return api.Errorf(api.CodeUnavailable, "put commit %q: bulk-delete job %d keeps %d bytes of keys, at most %d; retry after it ends", key, j.ID, ks.bytes, api.MaxJobKeptBytes)
		}
	}
	return nil
}

// applyPutCommitBatch is one PutCommit per item, in order.
func (st *state) applyPutCommitBatch(c *PutCommitBatch) *PutEndBatchResult {
	if k, dup := DuplicateBatchKey(len(c.Items), func(i int) string { return c.Items[i].Key }); dup {
		return &PutEndBatchResult{Err: api.Errorf(api.CodeInvalidParams, "put commit batch names key %q twice", k)}
	}
	out := &PutEndBatchResult{Items: make([]PutEndResult, len(c.Items))}
	for i, it := range c.Items {
		out.Items[i] = *st.applyPutCommit(&PutCommit{V: PutCommitV1, PutCommitItem: it, Now: c.Now})
	}
	return out
}

// blockRecords is the live blocks as snapshot records (nil for none, so a
// state without blocks encodes as before).
func (st *state) blockRecords() []snapshot.IncBlock {
	if len(st.blocks) == 0 {
		return nil
	}
	out := make([]snapshot.IncBlock, len(st.blocks))
	for i, b := range st.blocks {
		out[i] = snapshot.IncBlock{Lo: b.lo, Hi: b.hi, Expires: b.expires}
	}
	return out
}

// restoreBlocks installs a snapshot's live blocks: ascending, disjoint,
// non-empty, at most MaxIncBlocks.
func (st *state) restoreBlocks(rs []snapshot.IncBlock) error {
	if len(rs) > MaxIncBlocks {
		return corrupt("%d incarnation blocks, more than %d", len(rs), MaxIncBlocks)
	}
	st.blocks = nil
	for i, r := range rs {
		if r.Lo == 0 || r.Hi < r.Lo || (i > 0 && r.Lo <= rs[i-1].Hi) {
			return corrupt("incarnation block %d [%d, %d] is empty or not above the one before", i, r.Lo, r.Hi)
		}
		st.blocks = append(st.blocks, incBlock{lo: r.Lo, hi: r.Hi, expires: r.Expires})
	}
	return nil
}

// LiveBlocks is how many incarnation blocks are live and the earliest
// expiry among them (0 for none): the leader proposes the time that
// expires them once its clock passed it, so reconcile answers name their
// uncommitted incarnations without waiting for other traffic.
func (f *FSM) LiveBlocks() (n int, earliest int64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for i, b := range f.st.blocks {
		if i == 0 || b.expires < earliest {
			earliest = b.expires
		}
	}
	return len(f.st.blocks), earliest
}

// NewestOf is the newest incarnation key holds in the table: its COMPLETE
// or PENDING one or one its tasks name (zero for none). A PutCommit
// commits only above it, so the leader grants above it.
func (f *FSM) NewestOf(key string) api.ObjectIncarnation {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e := f.st.objects.get(key)
	var out api.ObjectIncarnation
	for _, o := range []*object{e.complete, e.pending} {
		if o != nil && out.Less(o.inc) {
			out = o.inc
		}
	}
	if t := newestTask(e.tasks); t != nil && out.Less(t.inc) {
		out = t.inc
	}
	return out
}
