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
// live), so a ref not named is asked about again later, a few times,
// and then left to the periodic reconcile.

// maxGrantedWrites bounds the remembered writes; past it the oldest are
// left to the periodic reconcile.
const maxGrantedWrites = 1 << 16

// grantedAsks are the delays after a grant's expiry at which its record
// is asked about; a ref still not named after the last is dropped.
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

// again puts back the writes the master did not name, for their next
// ask, unless they had their last.
func (g *grantedWrites) again(ws []grantedWrite) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range ws {
		if w.asked++; w.asked < len(grantedAsks) {
			g.list = append(g.list, w)
		}
	}
}

// hold puts back writes the master said it cannot decide yet, asked
// about again the next delay after now (64 s at the longest): they are
// not dropped, since the master decides each once its block expires or
// the task it waits for ends.
func (g *grantedWrites) hold(ws []grantedWrite, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range ws {
		w.asked = min(w.asked+1, len(grantedAsks)-1)
		w.expires = now
		g.list = append(g.list, w)
	}
}

// retry puts back writes the master named not live whose tombstone
// failed: due at once, so the next pass tombstones them again.
func (g *grantedWrites) retry(ws []grantedWrite) {
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
		for i := range ws {
			ws[i].asked-- // not asked after all
		}
		s.granted.again(ws)
		return err
	}
	named := make(map[api.ObjectRef]bool, len(rr.NotLive))
	for _, r := range rr.NotLive {
		named[r] = true
	}
	undecided := make(map[api.ObjectRef]bool, len(rr.Undecided))
	for _, r := range rr.Undecided {
		undecided[r] = true
	}
	var rest, held []grantedWrite
	tasks := make([]api.LocalDeleteTask, 0, len(rr.NotLive))
	for _, w := range ws {
		switch {
		case named[w.ref]:
			tasks = append(tasks, api.LocalDeleteTask{Segment: s.store.SegmentID(), Key: w.ref.Key, Incarnation: w.ref.Incarnation})
		case undecided[w.ref]:
			// The master will decide it (a block expires, a task ends):
			// it is asked again at the longest delay, never dropped.
			held = append(held, w)
		default:
			rest = append(rest, w)
		}
	}
	s.granted.again(rest)
	s.granted.hold(held, time.Now())
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
	s.granted.retry(failed)
	s.log.Info("tombstoned records written under expired grants that the master does not know as live", "count", len(tasks))
	return nil
}
