package master

import (
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/fsm"
)

// raftFSM adapts *fsm.FSM to raft.FSM. It adds two things the pure FSM must
// not have: halting the process on an entry the FSM refuses, and waking
// the long polls an applied entry concerns (wakeups.go).
type raftFSM struct {
	f    *fsm.FSM
	log  hclog.Logger
	halt func(error)
	wake *wakeups
	obs  func(d time.Duration)
	// snapObs observes how long Snapshot held the fsm goroutine.
	snapObs func(d time.Duration)
	meter   snapshotMeter // log bytes applied and snapshot sizes (snapshotter.go)
	// snapRate is the bytes a second Persist writes a snapshot at, at
	// most (snappace.go; 0: as fast as it goes).
	snapRate int64
	// stopping is closed when the node shuts down: pacing stops.
	stopping <-chan struct{}
	// applied tells a proposer waiting on this node its entry's result
	// as soon as it is applied (applied.go).
	applied *appliedHooks
}

func (r *raftFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	start := time.Now()
	r.meter.appliedBytes.Add(uint64(len(l.Data)))
	r.meter.appliedEntries.Add(1)
	res, wake, err := r.f.ApplyWake(l.Index, l.Term, l.Data)
	if err != nil {
		// Never skip an entry and never return: returning would let
		// hashicorp/raft advance its applied index past an entry this node
		// did not apply. The operator must run a build that knows it.
		r.log.Error("refusing raft log entry; halting without applying it",
			"index", l.Index, "term", l.Term, "error", err)
		r.halt(fmt.Errorf("raft log entry %d: %w", l.Index, err))
		select {} // halt must not return; block this goroutine forever if it does
	}
	if r.obs != nil {
		r.obs(time.Since(start))
	}
	r.applied.fire(l.Data, res)
	r.wake.wake(wake)
	return res
}

func (r *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	// Called on the fsm goroutine between applies: what was applied so far
	// is exactly what this snapshot holds.
	start := time.Now()
	r.meter.appliedAtSnap.Store(r.meter.appliedBytes.Load())
	s := &fsmSnapshot{v: r.f.Snapshot(), meter: &r.meter, rate: r.snapRate, stopping: r.stopping}
	if r.snapObs != nil {
		r.snapObs(time.Since(start))
	}
	return s, nil
}

func (r *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	cr := &countingReader{r: rc}
	if err := r.f.Restore(cr); err != nil {
		return err
	}
	// To the snapshot triggers, the snapshot restored is this node's last
	// one: without its size they fall to their floors, and a master
	// restarted at 10 M objects takes a 1.7 GB snapshot after 64 MiB of
	// log.
	r.meter.lastSnapBytes.Store(cr.n)
	r.meter.appliedAtSnap.Store(r.meter.appliedBytes.Load())
	r.wake.all() // a restored state may differ anywhere
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += uint64(k)
	return k, err
}

type fsmSnapshot struct {
	v        *fsm.View
	meter    *snapshotMeter
	rate     int64
	stopping <-chan struct{}
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	var w io.Writer = sink
	if pace := newWritePacer(s.rate, s.stopping); pace != nil {
		w = &pacedWriter{w: sink, pace: pace}
	}
	n, err := writeInBackground(s.v, w)
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	s.meter.lastSnapBytes.Store(uint64(n))
	s.meter.lastPersistNano.Store(int64(time.Since(start)))
	return nil
}

func (s *fsmSnapshot) Release() { s.v.Release() }
