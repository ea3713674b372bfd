package fsm

import "sexton/api"

// applyRemove is the REMOVE intent: per key, in request order, reserve one
// task slot per COMPLETE LOCAL_DISK replica on a capable segment; if they
// all fit, drop the COMPLETE incarnation and create the tasks, else fail
// that key with LOCAL_DELETE_REGISTRY_FULL and leave it untouched. A key
// with an expected incarnation (IfInc) that its COMPLETE incarnation is not
// fails with INCARNATION_MISMATCH, untouched. Keys are independent: there
// is no batch-wide transaction. A pending put is not touched.
//
// The entry is one request (Session) or, when the leader group-committed
// several, one span per request, each answered from or stored in the
// session table on its own.
func (st *state) applyRemove(c *Remove) *RemoveResult {
	res := &RemoveResult{Results: make([]api.KeyResult, len(c.Keys))}
	if len(c.Spans) == 0 {
		res.Duplicate = st.removeSpan(c, 0, len(c.Keys), c.Session, res)
		return res
	}
	res.SpanDuplicate = make([]bool, len(c.Spans))
	all, from := true, 0
	for i, sp := range c.Spans {
		d := st.removeSpan(c, from, from+sp.N, sp.Session, res)
		res.SpanDuplicate[i], all = d, all && d
		from += sp.N
	}
	res.Duplicate = all
	return res
}

// removeSpan executes (or answers from the session table) keys [from, to)
// of c into res, and reports whether the answer came from the table.
func (st *state) removeSpan(c *Remove, from, to int, s api.Session, res *RemoveResult) bool {
	out := res.Results[from:to]
	for i := range out {
		out[i].Key = c.Keys[from+i]
	}
	g := st.sessionBegin(CmdRemove, s, c.Now)
	switch {
	case g.prev != nil && g.prev.err != nil: // a result too large to keep
		for i := range out {
			out[i].Err = g.prev.err
		}
		return true
	case g.prev != nil:
		if int(g.prev.count) != len(out) {
			err := api.Errorf(api.CodeInvalidParams, "session: client %q seq %d was a remove of %d keys, repeated with %d", s.ClientID, s.Seq, g.prev.count, len(out))
			for i := range out {
				out[i].Err = err
			}
			return false
		}
		for _, it := range g.prev.items() {
			out[it.i].Err = it.err
		}
		return true
	case g.err != nil:
		for i := range out {
			out[i].Err = g.err
		}
		return g.dup
	}
	for i := range out {
		var want api.ObjectIncarnation
		if len(c.IfInc) != 0 {
			want = c.IfInc[from+i]
		}
		var created int
		created, out[i].Err = st.removeKey(out[i].Key, want, c.Now)
		res.TasksCreated += created
	}
	if g.cs != nil {
		r := sessResult{kind: CmdRemove, count: int32(len(out))}
		for i := range out {
			if out[i].Err == nil {
				continue
			}
			out[i].Err = storedItemErr(out[i].Err)
			if r.extra == nil {
				r.extra = &resultExtra{}
			}
			r.extra.items = append(r.extra.items, itemResult{i: int32(i), err: out[i].Err})
		}
		st.sessionEnd(&g, r)
	}
	return false
}

// removeKey removes one key's COMPLETE incarnation (which must be want
// unless want is zero) and returns the tasks it created.
func (st *state) removeKey(key string, want api.ObjectIncarnation, now int64) (int, *api.Error) {
	return st.removeKeyWithin(key, want, now, st.reg.capacity)
}

// removeKeyWithin is removeKey filling the registry to at most limit
// tasks: a job step leaves the clients' reserve (JobRegistryReserve). A
// key that needs no task (no replica on a segment that takes tasks) is
// removed even while clients fill the reserve past the limit.
func (st *state) removeKeyWithin(key string, want api.ObjectIncarnation, now int64, limit int) (int, *api.Error) {
	if err := api.ValidKey(key); err != nil {
		return 0, api.AsError(err)
	}
	e := st.objects.takeComplete(key)
	if e.complete == nil {
		return 0, api.Errorf(api.CodeObjectNotFound, "key %q", key)
	}
	if !want.IsZero() && e.complete.inc != want {
		st.objects.putBack(key, e.complete)
		return 0, api.Errorf(api.CodeIncarnationMismatch, "key %q holds %s, not %s", key, e.complete.inc, want)
	}
	plan := st.planTasks(key, e, e.complete)
	if len(plan) > 0 && st.reg.len()+len(plan) > limit {
		st.objects.putBack(key, e.complete)
		return 0, registryFull(key, len(plan), st.reg.len(), limit)
	}
	if err := st.dfsMarksFit(key, e.complete); err != nil {
		st.objects.putBack(key, e.complete)
		return 0, err
	}
	old := e
	old.complete = nil // taken out of the tree already
	created := st.createTasks(&e, plan, e.complete.tenant(), now)
	// The DFS range is freed by DFSMarked, once its removal record is
	// durable: never reused before it.
	st.queueDFSMarks(key, e.complete, true)
	e.complete = nil
	st.objects.set(key, old, e)
	st.rememberRemoved(key)
	return created, nil
}
