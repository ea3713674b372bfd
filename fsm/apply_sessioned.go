package fsm

import "sexton/api"

// The commands that carry a client session run through the session table
// (runOnce): sessionBegin answers a repeat from the table (Duplicate,
// nothing executed), otherwise the command executes and its result is
// stored.

// once says how a result type R meets the session table.
type once[R any] struct {
	// replay is the answer to a repeat, rebuilt from its stored result.
	replay func(prev *sessResult) R
	// refused is the answer when the session table refuses the request
	// (dup: the refusal is the table's OUTCOME_UNKNOWN for a forgotten
	// result).
	refused func(err *api.Error, dup bool) R
	// keep is what the table stores of res; it shortens res's errors to
	// the stored ones, so the first answer and every repeat agree.
	keep func(res R) sessResult
}

// runOnce runs exec, a command of type kind under session s at the
// leader's time now, at most once per request, as o says.
func runOnce[R any](st *state, kind CommandType, s api.Session, now int64, o once[R], exec func() R) R {
	g := st.sessionBegin(kind, s, now)
	if g.prev != nil {
		return o.replay(g.prev)
	}
	if g.err != nil {
		return o.refused(g.err, g.dup)
	}
	res := exec()
	if g.cs != nil {
		r := o.keep(res)
		r.kind = kind
		st.sessionEnd(&g, r)
	}
	return res
}

var putStartOnce = once[*PutStartResult]{
	replay: func(p *sessResult) *PutStartResult {
		return &PutStartResult{Err: p.err, Incarnation: p.inc, Replicas: p.reps, Duplicate: true}
	},
	refused: func(err *api.Error, dup bool) *PutStartResult { return &PutStartResult{Err: err, Duplicate: dup} },
	keep: func(res *PutStartResult) sessResult {
		res.Err = storedErr(res.Err)
		return sessResult{err: res.Err, inc: res.Incarnation, reps: res.Replicas}
	},
}

func (st *state) applyPutStartSessioned(index uint64, c *PutStart) *PutStartResult {
	return runOnce(st, CmdPutStart, c.Session, c.Now, putStartOnce, func() *PutStartResult { return st.applyPutStart(index, c) })
}

// putEndOnce serves PutEnd, PutRevoke and PutCommit.
var putEndOnce = once[*PutEndResult]{
	replay: func(p *sessResult) *PutEndResult {
		return &PutEndResult{Err: p.err, TasksCreated: int(p.count), Duplicate: true}
	},
	refused: func(err *api.Error, dup bool) *PutEndResult { return &PutEndResult{Err: err, Duplicate: dup} },
	keep: func(res *PutEndResult) sessResult {
		res.Err = storedErr(res.Err)
		return sessResult{err: res.Err, count: int32(res.TasksCreated)}
	},
}

func (st *state) applyPutEndSessioned(c *PutEnd) *PutEndResult {
	return runOnce(st, CmdPutEnd, c.Session, c.Now, putEndOnce, func() *PutEndResult { return st.applyPutEnd(c) })
}

func (st *state) applyPutRevokeSessioned(c *PutRevoke) *PutEndResult {
	return runOnce(st, CmdPutRevoke, c.Session, c.Now, putEndOnce, func() *PutEndResult { return st.applyPutRevoke(c) })
}

// applyPutCommitSessioned is applyPutCommit answered once per session.
func (st *state) applyPutCommitSessioned(c *PutCommit) *PutEndResult {
	return runOnce(st, CmdPutCommit, c.Session, c.Now, putEndOnce, func() *PutEndResult { return st.applyPutCommit(c) })
}

// applyPutStartBatchSessioned stores the batch's first incarnation once
// and each item's error and replicas.
func (st *state) applyPutStartBatchSessioned(index uint64, c *PutStartBatch) *PutStartBatchResult {
	return runOnce(st, CmdPutStartBatch, c.Session, c.Now, once[*PutStartBatchResult]{
		replay: func(p *sessResult) *PutStartBatchResult {
			out := &PutStartBatchResult{Err: p.err, Duplicate: true}
			if p.err == nil {
				out.Items = make([]PutStartResult, p.count)
				for _, it := range p.items() {
					out.Items[it.i] = PutStartResult{Err: it.err, Replicas: it.reps}
					if it.err == nil {
						out.Items[it.i].Incarnation = p.inc
					}
				}
			}
			return out
		},
		refused: func(err *api.Error, dup bool) *PutStartBatchResult {
			return &PutStartBatchResult{Err: err, Duplicate: dup}
		},
		keep: func(res *PutStartBatchResult) sessResult {
			res.Err = storedErr(res.Err)
			r := sessResult{err: res.Err, inc: st.incarnationAt(index)}
			r.keepItems(len(res.Items), func(i int) itemResult {
				res.Items[i].Err = storedItemErr(res.Items[i].Err)
				return itemResult{err: res.Items[i].Err, reps: res.Items[i].Replicas}
			})
			return r
		},
	}, func() *PutStartBatchResult { return st.applyPutStartBatch(index, c) })
}

// putItemsOnce serves PutEndBatch and PutCommitBatch: one result per
// item, each an error or a task count.
var putItemsOnce = once[*PutEndBatchResult]{
	replay: func(p *sessResult) *PutEndBatchResult {
		out := &PutEndBatchResult{Err: p.err, Duplicate: true}
		if p.err == nil {
			out.Items = make([]PutEndResult, p.count)
			for _, it := range p.items() {
				out.Items[it.i] = PutEndResult{Err: it.err, TasksCreated: int(it.tasks)}
			}
		}
		return out
	},
	refused: func(err *api.Error, dup bool) *PutEndBatchResult { return &PutEndBatchResult{Err: err, Duplicate: dup} },
	keep: func(res *PutEndBatchResult) sessResult {
		res.Err = storedErr(res.Err)
		r := sessResult{err: res.Err}
		r.keepItems(len(res.Items), func(i int) itemResult {
			res.Items[i].Err = storedItemErr(res.Items[i].Err)
			return itemResult{err: res.Items[i].Err, tasks: int32(res.Items[i].TasksCreated)}
		})
		return r
	},
}

func (st *state) applyPutEndBatchSessioned(c *PutEndBatch) *PutEndBatchResult {
	return runOnce(st, CmdPutEndBatch, c.Session, c.Now, putItemsOnce, func() *PutEndBatchResult { return st.applyPutEndBatch(c) })
}

func (st *state) applyPutCommitBatchSessioned(c *PutCommitBatch) *PutEndBatchResult {
	return runOnce(st, CmdPutCommitBatch, c.Session, c.Now, putItemsOnce, func() *PutEndBatchResult { return st.applyPutCommitBatch(c) })
}

// keepItems sets r's count to n and, when n > 0, its items to item(i)
// for each, numbered.
func (r *sessResult) keepItems(n int, item func(i int) itemResult) {
	r.count = int32(n)
	if n == 0 {
		return
	}
	r.extra = &resultExtra{items: make([]itemResult, n)}
	for i := range r.extra.items {
		r.extra.items[i] = item(i)
		r.extra.items[i].i = int32(i)
	}
}

func (st *state) applySettingsSessioned(c *Settings) *SettingsResult {
	return runOnce(st, CmdSettings, c.Session, c.Now, once[*SettingsResult]{
		replay: func(p *sessResult) *SettingsResult {
			out := &SettingsResult{Err: p.err, Duplicate: true}
			if p.extra != nil {
				out.Settings = p.extra.settings
			}
			return out
		},
		refused: func(err *api.Error, dup bool) *SettingsResult {
			return &SettingsResult{Err: err, Settings: st.effectiveSettings(), Duplicate: dup}
		},
		keep: func(res *SettingsResult) sessResult {
			res.Err = storedErr(res.Err)
			return sessResult{err: res.Err, extra: &resultExtra{settings: res.Settings}}
		},
	}, func() *SettingsResult { return st.applySettings(c) })
}
