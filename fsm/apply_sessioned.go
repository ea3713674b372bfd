package fsm

import "sexton/api"

// The commands that carry a client session run through the session table:
// sessionBegin answers a repeat from the table (Duplicate, nothing
// executed), otherwise the command executes and its result is stored.

func (st *state) applyPutStartSessioned(index uint64, c *PutStart) *PutStartResult {
	g := st.sessionBegin(CmdPutStart, c.Session, c.Now)
	if g.prev != nil {
		return &PutStartResult{Err: g.prev.err, Incarnation: g.prev.inc, Replicas: g.prev.reps, Duplicate: true}
	}
	if g.err != nil {
		return &PutStartResult{Err: g.err, Duplicate: g.dup}
	}
	res := st.applyPutStart(index, c)
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		st.sessionEnd(&g, sessResult{kind: CmdPutStart, err: res.Err, inc: res.Incarnation, reps: res.Replicas})
	}
	return res
}

func (st *state) applyPutEndSessioned(c *PutEnd) *PutEndResult {
	return st.putEndSessioned(CmdPutEnd, c.Session, c.Now, func() *PutEndResult { return st.applyPutEnd(c) })
}

func (st *state) applyPutRevokeSessioned(c *PutRevoke) *PutEndResult {
	return st.putEndSessioned(CmdPutRevoke, c.Session, c.Now, func() *PutEndResult { return st.applyPutRevoke(c) })
}

// putEndSessioned serves PutEnd, PutRevoke and PutCommit (kind says which).
func (st *state) putEndSessioned(kind CommandType, s api.Session, now int64, exec func() *PutEndResult) *PutEndResult {
	g := st.sessionBegin(kind, s, now)
	if g.prev != nil {
		return &PutEndResult{Err: g.prev.err, TasksCreated: int(g.prev.count), Duplicate: true}
	}
	if g.err != nil {
		return &PutEndResult{Err: g.err, Duplicate: g.dup}
	}
	res := exec()
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		st.sessionEnd(&g, sessResult{kind: kind, err: res.Err, count: int32(res.TasksCreated)})
	}
	return res
}

func (st *state) applyPutStartBatchSessioned(index uint64, c *PutStartBatch) *PutStartBatchResult {
	g := st.sessionBegin(CmdPutStartBatch, c.Session, c.Now)
	if g.prev != nil {
		out := &PutStartBatchResult{Err: g.prev.err, Duplicate: true}
		if g.prev.err == nil {
			out.Items = make([]PutStartResult, g.prev.count)
			for _, it := range g.prev.items() {
				out.Items[it.i] = PutStartResult{Err: it.err, Replicas: it.reps}
				if it.err == nil {
					out.Items[it.i].Incarnation = g.prev.inc
				}
			}
		}
		return out
	}
	if g.err != nil {
		return &PutStartBatchResult{Err: g.err, Duplicate: g.dup}
	}
	res := st.applyPutStartBatch(index, c)
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		r := sessResult{kind: CmdPutStartBatch, err: res.Err, inc: st.incarnationAt(index), count: int32(len(res.Items))}
		if len(res.Items) > 0 {
			r.extra = &resultExtra{items: make([]itemResult, len(res.Items))}
			for i := range res.Items {
				res.Items[i].Err = storedItemErr(res.Items[i].Err)
				r.extra.items[i] = itemResult{i: int32(i), err: res.Items[i].Err, reps: res.Items[i].Replicas}
			}
		}
		st.sessionEnd(&g, r)
	}
	return res
}

func (st *state) applyPutEndBatchSessioned(c *PutEndBatch) *PutEndBatchResult {
	return st.putItemsSessioned(CmdPutEndBatch, c.Session, c.Now, func() *PutEndBatchResult { return st.applyPutEndBatch(c) })
}

func (st *state) applyPutCommitBatchSessioned(c *PutCommitBatch) *PutEndBatchResult {
	return st.putItemsSessioned(CmdPutCommitBatch, c.Session, c.Now, func() *PutEndBatchResult { return st.applyPutCommitBatch(c) })
}

// putItemsSessioned serves PutEndBatch and PutCommitBatch (kind says
// which): one result per item, each an error or a task count.
func (st *state) putItemsSessioned(kind CommandType, s api.Session, now int64, exec func() *PutEndBatchResult) *PutEndBatchResult {
	g := st.sessionBegin(kind, s, now)
	if g.prev != nil {
		out := &PutEndBatchResult{Err: g.prev.err, Duplicate: true}
		if g.prev.err == nil {
			out.Items = make([]PutEndResult, g.prev.count)
			for _, it := range g.prev.items() {
				out.Items[it.i] = PutEndResult{Err: it.err, TasksCreated: int(it.tasks)}
			}
		}
		return out
	}
	if g.err != nil {
		return &PutEndBatchResult{Err: g.err, Duplicate: g.dup}
	}
	res := exec()
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		r := sessResult{kind: kind, err: res.Err, count: int32(len(res.Items))}
		if len(res.Items) > 0 {
			r.extra = &resultExtra{items: make([]itemResult, len(res.Items))}
			for i := range res.Items {
				res.Items[i].Err = storedItemErr(res.Items[i].Err)
				r.extra.items[i] = itemResult{i: int32(i), err: res.Items[i].Err, tasks: int32(res.Items[i].TasksCreated)}
			}
		}
		st.sessionEnd(&g, r)
	}
	return res
}

func (st *state) applySettingsSessioned(c *Settings) *SettingsResult {
	g := st.sessionBegin(CmdSettings, c.Session, c.Now)
	if g.prev != nil {
		out := &SettingsResult{Err: g.prev.err, Duplicate: true}
		if g.prev.extra != nil {
			out.Settings = g.prev.extra.settings
		}
		return out
	}
	if g.err != nil {
		return &SettingsResult{Err: g.err, Settings: st.effectiveSettings(), Duplicate: g.dup}
	}
	res := st.applySettings(c)
	if g.cs != nil {
		res.Err = storedErr(res.Err)
		st.sessionEnd(&g, sessResult{kind: CmdSettings, err: res.Err, extra: &resultExtra{settings: res.Settings}})
	}
	return res
}
