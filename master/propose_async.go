package master

import (
	"sync/atomic"
	"time"

	"sexton/fsm"
)

// asyncFallback is how long proposeAsync leaves a proposal to its applied
// hook before a goroutine starts waiting for its future as propose does:
// far above a commit's usual time, so that goroutine is started for the
// slow commits and failed proposals only, far below ApplyTimeout.
const asyncFallback = 20 * time.Millisecond

// proposeAsync is propose for an asynchronous handler
// (transport.AsyncHandlerFunc): it returns once the entry is handed to
// Raft, and done gets the fsm's result, or the error propose would
// return, exactly once. It waits only while Raft's apply queue is full.
//
// A proposal parks no goroutine: the entry's applied hook (applied.go)
// answers on the fsm goroutine the moment this node applies it. propose
// costs a handler goroutine parked per call, a goroutine per proposal to
// wait for its future, and two wake-ups between them on the way back.
// Only a proposal the hook has not answered within asyncFallback (a slow
// commit, a lost leadership, a shutdown) gets a goroutine that waits for
// its future, bounded by ApplyTimeout as in propose, and answers from it
// unless the hook answered first.
func (n *Node) proposeAsync(cmd fsm.Command, done func(res any, err error)) {
	data, err := n.encodeProposal(cmd)
	if err != nil {
		done(nil, err)
		return
	}
	var answered atomic.Bool
	var fallback atomic.Pointer[time.Timer]
	start := time.Now()
	remove := n.rfsm.applied.add(data, func(res any) {
		if !answered.CompareAndSwap(false, true) {
			return
		}
		if t := fallback.Load(); t != nil {
			t.Stop()
		}
		n.metrics.observeCommit(time.Since(start))
		done(res, nil)
	})
	f := n.raft.Apply(data, n.cfg.ApplyTimeout)
	fallback.Store(time.AfterFunc(asyncFallback, func() {
		if answered.Load() {
			return
		}
		err := n.waitApplied(f, cmd.Type().String())
		remove()
		if !answered.CompareAndSwap(false, true) {
			return
		}
		if err != nil {
			done(nil, err)
			return
		}
		n.metrics.observeCommit(time.Since(start))
		done(f.Response(), nil)
	}))
	if answered.Load() {
		// The hook answered before the timer existed to be stopped.
		fallback.Load().Stop()
	}
}
