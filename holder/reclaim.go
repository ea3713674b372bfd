package holder

import (
	"sync"
	"time"

	"sexton/api"
)

// Reclaiming the bytes of one-commit puts that never commit
// (docs/DESIGN.md §8 "One-commit puts"): a write whose PutCommit never
// comes leaves a record no delete task names. The holder remembers each
// record it stored under a grant and, once the grant expired, asks the
// master whether it is live (the reconcile call, for just those refs);
// what the master names not live is tombstoned as reconcile does. The
// master leaves out a ref whose commit may still come (its block is
// live) and names it undecided, so it is asked about again later; a ref
// named neither way is live in the table, whose delete tasks cover it
// from then on, so it is not asked about again.

// maxGrantedWrites bounds the remembered writes; past it the oldest are
// left to the periodic reconcile.
const maxGrantedWrites = 1 << 16

// grantedAsks are the delays at which a record is asked about: the first
// after its grant's expiry, the next ones while the master cannot decide
// it, at the last delay from then on.
var grantedAsks = []time.Duration{time.Second, 4 * time.Second, 16 * time.Second, 64 * time.Second}

type grantedWrite struct {
	ref     api.ObjectRef
	expires time.Time
	asked   int // how many of grantedAsks were done
}

type grantedWrites struct {
	mu   sync.Mutex
	list []grantedWrite
}

// note remembers a record stored under a grant expiring at expires.
func (g *grantedWrites) note(ref api.ObjectRef, expires time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.list) >= maxGrantedWrites {
		g.list = append(g.list[:0], g.list[1:]...)
	}
	g.list = append(g.list, grantedWrite{ref: ref, expires: expires})
}

// due takes up to limit writes whose next ask is due at now.
func (g *grantedWrites) due(now time.Time, limit int) []grantedWrite {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []grantedWrite
	keep := g.list[:0]
	for _, w := range g.list {
		if len(out) < limit && !now.Before(w.expires.Add(grantedAsks[w.asked])) {
			out = append(out, w)
			continue
		}
		keep = append(keep, w)
	}
	clear(g.list[len(keep):])
	g.list = keep
	return out
}

// hold puts back writes the master said it cannot decide yet, asked
// about again the next delay after now (64 s at the longest).
func (g *grantedWrites) hold(ws []grantedWrite, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range ws {
		w.asked = min(w.asked+1, len(grantedAsks)-1)
		w.expires = now
		g.list = append(g.list, w)
	}
}

// settle takes the master's answer about ws: it returns the refs named
// not live (to be tombstoned) and holds the undecided ones, asked about
// again at growing delays and never dropped, since the master decides
// each once its block expires or the task it waits for ends. A ref named
// neither way is live in the table (COMPLETE or PENDING on this
// segment): its removal will be a delete task, so it is forgotten, and
// asking again would only cost the leader a barrier.
func (g *grantedWrites) settle(ws []grantedWrite, rr *api.ReconcileResponse, now time.Time) []api.ObjectRef {
	named := make(map[api.ObjectRef]bool, len(rr.NotLive))
	for _, r := range rr.NotLive {
		named[r] = true
	}
	undecided := make(map[api.ObjectRef]bool, len(rr.Undecided))
	for _, r := range rr.Undecided {
		undecided[r] = true
	}
	var notLive []api.ObjectRef
	var held []grantedWrite
	for _, w := range ws {
		switch {
		case named[w.ref]:
			notLive = append(notLive, w.ref)
		case undecided[w.ref]:
			held = append(held, w)
		}
	}
	g.hold(held, now)
	return notLive
}

// putBack puts back writes as they were, due at once: those the call
// about failed, and those the master named not live whose tombstone
// failed, so the next pass asks or tombstones them again.
func (g *grantedWrites) putBack(ws []grantedWrite) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.list = append(g.list, ws...)
}

// reclaimGranted asks the master about the records whose grants expired
// and tombstones those it names not live. A failed call puts them back
// as they were.
func (s *Service) reclaimGranted() error {
	ws := s.granted.due(time.Now(), api.MaxReconcilePage)
	if len(ws) == 0 {
		return nil
	}
	_, epoch, _ := s.mountState()
	refs := make([]api.ObjectRef, len(ws))
	for i, w := range ws {
		refs[i] = w.ref
	}
	ctx, cancel := s.ctx(20 * time.Second)
	var rr api.ReconcileResponse
	err := s.cl.Call(ctx, api.MethodReconcileLocalDiskObjects, &api.ReconcileRequest{Segment: s.store.SegmentID(), MountEpoch: epoch, Objects: refs}, &rr)
	cancel()
	if err != nil {
		s.granted.putBack(ws)
		return err
	}
	tasks := make([]api.LocalDeleteTask, 0, len(rr.NotLive))
	for _, ref := range s.granted.settle(ws, &rr, time.Now()) {
		tasks = append(tasks, api.LocalDeleteTask{Segment: s.store.SegmentID(), Key: ref.Key, Incarnation: ref.Incarnation})
	}
	if len(tasks) == 0 {
		return nil
	}
	var failed []grantedWrite
	for _, res := range s.store.BatchMarkDeleted(tasks) {
		switch res.Outcome {
		case api.AckRemoved:
			s.reconciled.Add(1)
		case api.AckRetryableFailure:
			// The tombstone did not persist (a full or read-only disk):
			// the master's answer stands, so it is tried again at the next
			// pass rather than left to the periodic reconcile.
			failed = append(failed, grantedWrite{ref: api.ObjectRef{Key: res.Key, Incarnation: res.Incarnation}})
		}
	}
	s.granted.putBack(failed)
	s.log.Info("tombstoned records written under expired grants that the master does not know as live", "count", len(tasks))
	return nil
}
