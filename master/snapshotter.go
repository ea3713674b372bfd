package master

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"sexton/master/policy/snaptrigger"
)

// snapshotCheckEvery is how often a node looks at its snapshot triggers
// and its log sizing (snaptrigger.Meter, snaptrigger.LogSizing).
const snapshotCheckEvery = time.Second

// entrySizeWindow is the fewest entries followLogSize averages over.
const entrySizeWindow = 256

// followLogSize moves raft's count trigger to snaptrigger.CountTrigger of the last
// snapshot's size, and its trailing log to snaptrigger.TrailingCount of the entries
// applied since the last call, when either differs from the one in force
// by more than a tenth.
func (n *Node) followLogSize() {
	m := &n.rfsm.meter
	bytes, entries := m.AppliedBytes.Load(), m.AppliedEntries.Load()
	var avg float64
	if d := entries - n.sizedAtEntries; d >= entrySizeWindow {
		avg = float64(bytes-n.sizedAtBytes) / float64(d)
		n.sizedAtBytes, n.sizedAtEntries = bytes, entries
	}
	rc := n.raft.ReloadableConfig()
	want, move := snaptrigger.LogSizing(rc, snaptrigger.LogSizes{Threshold: n.cfg.SnapshotThreshold, Trailing: n.cfg.TrailingLogs, TrailingBytes: n.cfg.TrailingLogBytes}, m.LastSnapBytes.Load(), avg)
	if !move {
		return
	}
	if err := n.raft.ReloadConfig(want); err != nil {
		n.log.Warn("raft log sizing not moved", "snapshot_threshold", want.SnapshotThreshold, "trailing_logs", want.TrailingLogs, "error", err)
		return
	}
	// The count trigger moves with the snapshots, rarely; the trailing
	// log with the workload's entry sizes, as often as every second.
	logf := n.log.Debug
	if want.SnapshotThreshold != rc.SnapshotThreshold {
		logf = n.log.Info
	}
	logf("raft log sizing follows the snapshot and entry sizes", "snapshot_threshold", want.SnapshotThreshold,
		"trailing_logs", want.TrailingLogs, "last_snapshot_bytes", m.LastSnapBytes.Load(), "avg_entry_bytes", int(avg))
}

// snapshotStagger is this node's factor on the byte trigger: 1 + ½·i/n
// for the i-th of n voters in ID order (1, 1.17 and 1.33 for three).
// Every member applies the same log, so one trigger would start every
// member's snapshot at about the same entry; a snapshot takes a core for
// tens of seconds at 10 M objects, and with both followers busy the
// leader's commits wait on a slow quorum. Staggered, at most one member
// snapshots at a time under a steady write rate.
func (n *Node) snapshotStagger() float64 {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 1
	}
	var ids []string
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			ids = append(ids, string(s.ID))
		}
	}
	return snaptrigger.StaggerOf(n.cfg.ID, ids)
}

// snapshotByBytes is each node's snapshot trigger (every node snapshots
// its own fsm, leader or not). It asks raft for a snapshot when the meter
// says one is due; raft refuses while one is already running or nothing
// new was applied, which is fine: the next tick asks again.
func (n *Node) snapshotByBytes() {
	defer n.wg.Done()
	tick := time.NewTicker(snapshotCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-n.stopped:
			return
		case <-tick.C:
		}
		n.followLogSize()
		// The stagger is ≥ 1, so asking raft for the configuration is only
		// worth it once the unstaggered trigger is reached.
		if m := &n.rfsm.meter; !m.Due(n.cfg.SnapshotLogBytes, 1) || !m.Due(n.cfg.SnapshotLogBytes, n.snapshotStagger()) {
			continue
		}
		start := time.Now()
		err := n.raft.Snapshot().Error()
		switch {
		case err == nil:
			n.log.Info("snapshot taken: the log applied since the last one reached the byte trigger",
				"snapshot_bytes", n.rfsm.meter.LastSnapBytes.Load(), "took", time.Since(start).Round(time.Millisecond),
				"persist", time.Duration(n.rfsm.meter.LastPersistNano.Load()).Round(time.Millisecond))
		case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
		default:
			n.log.Warn("snapshot by log bytes failed; retrying on the next check", "error", err)
		}
	}
}

// serveSnapshotNow takes a snapshot of this node's fsm and answers with
// how long it took and its size (POST /debug/snapshot, --enable-debug).
func (n *Node) serveSnapshotNow(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	start := time.Now()
	if err := n.raft.Snapshot().Error(); err != nil {
		http.Error(w, "snapshot: "+err.Error(), http.StatusConflict)
		return
	}
	fmt.Fprintf(w, "snapshot taken in %v: %d bytes, persisted in %v\n", time.Since(start).Round(time.Millisecond),
		n.rfsm.meter.LastSnapBytes.Load(), time.Duration(n.rfsm.meter.LastPersistNano.Load()).Round(time.Millisecond))
}
