package master

import (
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// removeBatcher coalesces concurrent Remove and BatchRemove calls into one
// Remove entry (group commit): while one entry is being committed, the next
// calls queue, and they all go out in the next entry. Each call is one span
// of the entry (fsm.RemoveSpan) with its own session and expected
// incarnations, never split across entries, so the fsm deduplicates it as
// the request it is. Each caller gets its own slice of the per-key
// results, in its own request order.
//
// Per-request Applies cannot reach the throughput goal: bare raft commits a
// few thousand entries a second at 16 clients, while one entry can carry
// thousands of keys.
//
// One committer, so one Remove entry in flight at a time: everything that
// queued behind it goes out together in the next. A second committer
// would send the first few requests that arrive as an entry of their own,
// and hashicorp/raft's leader would write that entry to its log in the
// goroutine that would otherwise be taking the first entry's commit: both
// would wait, each entry with half the keys.
// Measured in master/DESIGN.md ("Writes and group commit").
type removeBatcher struct {
	propose func(cmd fsm.Command, onApplied func(any)) (any, error)
	metrics *metrics
	maxKeys int
	reqs    chan *removeReq
	done    chan struct{}
	wg      sync.WaitGroup
}

type removeReq struct {
	keys  []string
	ifInc []api.ObjectIncarnation // empty, or one per key (zero: unconditional)
	sess  api.Session
	done  func(removeReply) // called once, from the committer; must not block
}

type removeReply struct {
	results []api.KeyResult
	err     error
}

// newRemoveBatcher starts the committer; propose is the node's
// proposeApplied (a test's stand-in, in tests).
func newRemoveBatcher(propose func(cmd fsm.Command, onApplied func(any)) (any, error), m *metrics, maxKeys int) *removeBatcher {
	// One entry never carries more keys than the fsm decodes.
	if maxKeys <= 0 || maxKeys > api.MaxBatchKeys {
		maxKeys = api.MaxBatchKeys
	}
	b := &removeBatcher{propose: propose, metrics: m, maxKeys: maxKeys, reqs: make(chan *removeReq, 1024), done: make(chan struct{})}
	b.wg.Add(1)
	go b.loop()
	return b
}

func (b *removeBatcher) close() {
	close(b.done)
	b.wg.Wait()
}

// remove submits one request's keys (with their expected incarnations,
// none or one per key) and waits for their results.
func (b *removeBatcher) remove(keys []string, ifInc []api.ObjectIncarnation, sess api.Session) ([]api.KeyResult, error) {
	ch := make(chan removeReply, 1)
	b.submit(keys, ifInc, sess, func(rep removeReply) { ch <- rep })
	rep := <-ch
	return rep.results, rep.err
}

// submit queues one request's keys and returns; done gets their results
// once, from the committer's goroutine (or from this one, when the
// request is refused before it is queued), and must not block. It waits
// only while the queue is full. The RPC handlers use it so that a queued
// request parks no goroutine (transport.AsyncHandlerFunc).
func (b *removeBatcher) submit(keys []string, ifInc []api.ObjectIncarnation, sess api.Session, done func(removeReply)) {
	if m := api.IfIncMismatch(len(ifInc), len(keys)); m != "" {
		done(removeReply{err: api.Errorf(api.CodeInternal, "%s", m)})
		return
	}
	r := &removeReq{keys: keys, ifInc: ifInc, sess: sess, done: done}
	select {
	case b.reqs <- r:
	case <-b.done:
		done(removeReply{err: api.Errorf(api.CodeUnavailable, "master shutting down")})
	}
}

// maxLinger bounds how long an entry waits for callers it expects back
// (loop); lingerShare is that wait as a share of a commit's time. Measured
// with 16 single-key clients on the two-core box (docs/SCALING.md, "The
// write path"): a quarter to a half of a commit gathers nearly all of them; a
// whole commit loses more to the odd slow caller than it gains.
const (
	maxLinger   = 2 * time.Millisecond
	lingerShare = 0.5
)

// loop gathers and commits entries, one at a time. Callers answered by an
// entry tend to call again at once (a client with one request in flight
// sends its next as soon as it has its answer), so the next entry waits
// for as many new requests as the last entry answered, on top of those
// that queued meanwhile, for at most lingerShare of a commit's time
// (maxLinger at most). Without the wait, 16 closed-loop clients fall into
// alternating entries: what queued during a commit goes out alone while
// the callers just answered are still on their way back, and then they
// go out alone in turn, so each entry carries about half of them (8 keys
// on average at 16 × 1, 27 % of entries a single key). One caller never
// waits: it expects one request back, and it is the one that arrives. A
// wait that runs out means the expected callers did not come back, so the
// entry after it does not wait at all.
func (b *removeBatcher) loop() {
	defer b.wg.Done()
	var (
		carry    *removeReq    // taken from the queue but did not fit the last entry
		expected int           // requests the next entry waits for
		commit   time.Duration // smoothed time of a commit
		timer    = time.NewTimer(time.Hour)
	)
	timer.Stop()
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-b.reqs:
			case <-b.done:
				b.drain()
				return
			}
		}
		batch := []*removeReq{first}
		total := len(first.keys)
		lingering, timedOut := false, false
	gather:
		for total < b.maxKeys {
			var r *removeReq
			select {
			case r = <-b.reqs:
			default:
				if len(batch) >= expected {
					break gather
				}
				if !lingering {
					lingering = true
					timer.Reset(min(time.Duration(float64(commit)*lingerShare), maxLinger))
				}
				select {
				case r = <-b.reqs:
				case <-timer.C:
					lingering, timedOut = false, true
					break gather
				case <-b.done:
					break gather
				}
			}
			if total+len(r.keys) > b.maxKeys {
				carry = r
				break
			}
			batch = append(batch, r)
			total += len(r.keys)
		}
		if lingering {
			timer.Stop() // since Go 1.23 no stale tick is received after Stop
		}
		start := time.Now()
		queued := b.commit(batch, total)
		took := time.Since(start)
		if commit == 0 {
			commit = took
		}
		commit += (took - commit) / 8
		expected = 0
		if !timedOut {
			expected = len(batch) + queued
		}
	}
}

func (b *removeBatcher) drain() {
	for {
		select {
		case r := <-b.reqs:
			r.done(removeReply{err: api.Errorf(api.CodeUnavailable, "master shutting down")})
		default:
			return
		}
	}
}

// commit proposes batch as one entry and answers its callers, from the
// fsm goroutine when the node's propose can (proposeApplied), else once
// the proposal returns. It returns how many requests had queued when the
// callers were answered: those, and the callers answered, are what the
// next entry waits for (loop). Counted at the answer, not after commit
// returns, because by then answered callers may be queued again.
func (b *removeBatcher) commit(batch []*removeReq, total int) (queued int) {
	cmd := &fsm.Remove{V: fsm.RemoveV2, Keys: make([]string, 0, total), Spans: make([]fsm.RemoveSpan, 0, len(batch))}
	conditional := false
	for _, r := range batch {
		conditional = conditional || len(r.ifInc) != 0
	}
	if conditional {
		cmd.IfInc = make([]api.ObjectIncarnation, 0, total)
	}
	for _, r := range batch {
		cmd.Keys = append(cmd.Keys, r.keys...)
		cmd.Spans = append(cmd.Spans, fsm.RemoveSpan{Session: r.sess, N: len(r.keys)})
		if !conditional {
			continue
		}
		if len(r.ifInc) != 0 {
			cmd.IfInc = append(cmd.IfInc, r.ifInc...)
		} else {
			cmd.IfInc = append(cmd.IfInc, make([]api.ObjectIncarnation, len(r.keys))...)
		}
	}
	b.metrics.removeBatchKeys.Observe(float64(len(cmd.Keys)))
	var (
		answered   atomic.Bool
		queuedThen atomic.Int64
	)
	answer := func(res any, err error) {
		if !answered.CompareAndSwap(false, true) {
			return
		}
		queuedThen.Store(int64(len(b.reqs)))
		b.answer(batch, len(cmd.Keys), res, err)
	}
	// Not proposeFor: this entry carries many requests, and duplicates are
	// counted per request (span) below, not once for the entry.
	res, err := b.propose(cmd, func(res any) { answer(res, nil) })
	answer(res, err)
	return int(queuedThen.Load())
}

// answer gives each caller of an entry of keys keys its own results, or
// err to all of them.
func (b *removeBatcher) answer(batch []*removeReq, keys int, res any, err error) {
	rr, _ := res.(*fsm.RemoveResult)
	if err == nil && (rr == nil || len(rr.Results) != keys) {
		err = api.Errorf(api.CodeInternal, "remove result %T for %d requested keys", res, keys)
	}
	if err != nil {
		for _, r := range batch {
			r.done(removeReply{err: err})
		}
		return
	}
	off := 0
	for i, r := range batch {
		if i < len(rr.SpanDuplicate) {
			b.metrics.noteDuplicate(fsm.CmdRemove, rr.SpanDuplicate[i])
		}
		r.done(removeReply{results: rr.Results[off : off+len(r.keys) : off+len(r.keys)]})
		off += len(r.keys)
	}
}
