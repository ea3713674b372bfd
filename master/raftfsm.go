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
}

func (r *raftFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	start := time.Now()
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
	r.wake.wake(wake)
	return res
}

func (r *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{v: r.f.Snapshot()}, nil
}

func (r *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := r.f.Restore(rc); err != nil {
		return err
	}
	r.wake.all() // a restored state may differ anywhere
	return nil
}

type fsmSnapshot struct{ v *fsm.View }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.v.WriteTo(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { s.v.Release() }
