package master

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/fsm"
	"sexton/master/policy/snaptrigger"
	"sexton/raftio"
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
	meter   snaptrigger.Meter // log bytes applied and snapshot sizes (snapshotter.go)
	// snapRate is the bytes a second Persist writes a snapshot at, at
	// most (raftio/snappace.go; 0: as fast as it goes).
	snapRate int64
	// stopping is closed when the node shuts down: pacing stops.
	stopping <-chan struct{}
	// applied tells a proposer waiting on this node its entry's result
	// as soon as it is applied (applied.go).
	applied *appliedHooks
	// refused is the first refusal, while raft starts, of a snapshot older
	// than 1.2.0 for --legacy-registry-capacity (legacyRefusal); started
	// is set once raft has started.
	refused atomic.Pointer[error]
	started atomic.Bool
}

func (r *raftFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	start := time.Now()
	r.meter.AppliedBytes.Add(uint64(len(l.Data)))
	r.meter.AppliedEntries.Add(1)
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
	if sr, ok := res.(*fsm.SettingsResult); ok && sr.LegacyDiffers {
		r.warnLegacyDiffers(l.Index, l.Data, sr)
	}
	r.applied.fire(l.Data, res)
	r.wake.wake(wake)
	return res
}

// warnLegacyDiffers logs that the cluster's first Settings entry carries
// legacy settings other than the ones this node applied the log before it
// under: the operator gave the masters different --legacy-registry-capacity
// values, and entries before index may have applied differently here.
func (r *raftFSM) warnLegacyDiffers(index uint64, data []byte, sr *fsm.SettingsResult) {
	leader := 0
	if c, err := fsm.Decode(data); err == nil {
		if s, ok := c.(*fsm.Settings); ok && s.Legacy != nil {
			leader = s.Legacy.RegistryCapacity
			if leader == 0 {
				leader = fsm.DefaultRegistryCapacity
			}
		}
	}
	r.log.Error("this master applied the log before the cluster's first Settings entry under another --legacy-registry-capacity than the leader that proposed it; "+
		"removes before that entry may have been answered differently here, so this master's state may differ from the leader's: "+
		"stop it, give it the leader's value and let it catch up from an empty data dir",
		"index", index, "legacy_registry_capacity", sr.OwnLegacy.RegistryCapacity, "leader_legacy_registry_capacity", leader)
}

func (r *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	// Called on the fsm goroutine between applies: what was applied so far
	// is exactly what this snapshot holds.
	start := time.Now()
	r.meter.AppliedAtSnap.Store(r.meter.AppliedBytes.Load())
	s := &fsmSnapshot{v: r.f.Snapshot(), meter: &r.meter, rate: r.snapRate, stopping: r.stopping}
	if r.snapObs != nil {
		r.snapObs(time.Since(start))
	}
	return s, nil
}

func (r *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if refused := r.legacyRefusal(); refused != nil && !r.started.Load() {
		// An older snapshot would restore under the same wrong capacity
		// and replay the log after it under it, or find that log
		// compacted away: hashicorp/raft falls back to one when the
		// newest is refused at start-up, so refuse them all.
		return refused
	}
	cr := &countingReader{r: rc}
	if err := r.f.Restore(cr); err != nil {
		var lc *fsm.LegacyCapacityError
		if errors.As(err, &lc) {
			err = fmt.Errorf("%w: start every master with --legacy-registry-capacity set to the --registry-capacity that build ran with "+
				"(at least %d, and exactly that build's value: the log after the snapshot replays as it was applied only under it)", err, lc.Tasks)
			r.refused.CompareAndSwap(nil, &err)
			r.log.Error("refusing snapshot", "error", err)
		}
		return err
	}
	// To the snapshot triggers, the snapshot restored is this node's last
	// one: without its size they fall to their floors, and a master
	// restarted at 10 M objects takes a 1.7 GB snapshot after 64 MiB of
	// log.
	r.meter.LastSnapBytes.Store(cr.n)
	r.meter.AppliedAtSnap.Store(r.meter.AppliedBytes.Load())
	r.wake.all() // a restored state may differ anywhere
	return nil
}

// legacyRefusal returns the refusal of a snapshot older than 1.2.0 that
// holds more tasks than --legacy-registry-capacity allows, or nil.
func (r *raftFSM) legacyRefusal() error {
	if p := r.refused.Load(); p != nil {
		return *p
	}
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
	meter    *snaptrigger.Meter
	rate     int64
	stopping <-chan struct{}
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	w := raftio.PacedWriter(sink, s.rate, s.stopping)
	n, err := raftio.WriteInBackground(s.v, w)
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	s.meter.LastSnapBytes.Store(uint64(n))
	s.meter.LastPersistNano.Store(int64(time.Since(start)))
	return nil
}

func (s *fsmSnapshot) Release() { s.v.Release() }
