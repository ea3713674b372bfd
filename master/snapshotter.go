package master

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Snapshot sizing. hashicorp/raft triggers snapshots by entry count only
// (SnapshotThreshold), but sexton's entries range from one removed key
// (~100 B) to a batch of 256 puts (tens of KiB), so a count says little
// about how big the log has grown or how long a restart would replay it.
// A snapshot costs O(state) (a full pass over every object) while the log
// grows O(writes), so the trigger here is bytes: a node snapshots once the
// entries it applied since its last snapshot add up to
// max(SnapshotLogBytes, SnapshotLogRatio × the last snapshot's size).
// With the ratio at 1/4 the snapshot work is at most about four times the
// bytes written, whatever the state's size, and a restart replays at most
// a quarter of a snapshot's worth of log after restoring the snapshot.
// Not 1/2: the log between snapshots is what raft.db grows to, which
// bbolt's mmap keeps in the master's RSS (~0.84 GB at 10 M objects with
// 1/2; docs/SCALING.md, "Snapshots"), while a snapshot written behind
// (raftio/writebehind.go) takes only seconds. Raft's own count
// trigger stays on as a backstop for logs of tiny entries, and rises with
// the state (countTrigger).
const (
	defaultSnapshotLogBytes = 64 << 20
	snapshotLogRatio        = 0.25
	snapshotCheckEvery      = time.Second
)

// snapshotBytesPerEntry scales raft's count trigger with the state: a
// node snapshots by count only after one entry per this many bytes of its
// last snapshot (countTrigger). A fixed count (65,536 entries) is a few
// megabytes of single-key removes, but at 10 M objects every snapshot is
// 1.7 GB and a core for 20 s or more: measured, under 16 clients' removes
// each of three masters started one every 66–91 s, back to back. At 2 KiB
// per entry a 10 M-object state snapshots by count every ~820 k entries
// (which bounds a restart's replay to as many); small states keep the
// configured floor.
const snapshotBytesPerEntry = 2048

// countTrigger is raft's SnapshotThreshold for a node whose last snapshot
// was lastSnapBytes long, never below the configured one.
func countTrigger(configured, lastSnapBytes uint64) uint64 {
	return max(configured, lastSnapBytes/snapshotBytesPerEntry)
}

// defaultTrailingLogBytes is about how much log a node keeps behind its
// last snapshot (Config.TrailingLogBytes, trailingCount), for a follower
// that fell a little behind to catch up from instead of a whole snapshot.
const defaultTrailingLogBytes = 64 << 20

// minTrailingLogs is the fewest entries trailingCount keeps.
const minTrailingLogs = 64

// entrySizeWindow is the fewest entries followLogSize averages over.
const entrySizeWindow = 256

// trailingCount is raft's TrailingLogs for entries of avgEntry bytes:
// about budget bytes of them, at least minTrailingLogs, never more than
// the configured count. hashicorp/raft counts the log it keeps behind
// a snapshot in entries, and sexton's entries range from ~100 B (one
// removed key) to tens of KiB (a batch of 256 puts): 10,240 entries of a
// bulk load were ~250 MB of raft.db kept for good, and the log store's
// file stays resident in the master's memory (docs/SCALING.md,
// "Snapshots").
func trailingCount(configured, budget uint64, avgEntry float64) uint64 {
	if avgEntry <= 0 {
		return configured
	}
	return min(configured, max(minTrailingLogs, uint64(float64(budget)/avgEntry)))
}

// followLogSize moves raft's count trigger to countTrigger of the last
// snapshot's size, and its trailing log to trailingCount of the entries
// applied since the last call, when either differs from the one in force
// by more than a tenth.
func (n *Node) followLogSize() {
	m := &n.rfsm.meter
	bytes, entries := m.appliedBytes.Load(), m.appliedEntries.Load()
	var avg float64
	if d := entries - n.sizedAtEntries; d >= entrySizeWindow {
		avg = float64(bytes-n.sizedAtBytes) / float64(d)
		n.sizedAtBytes, n.sizedAtEntries = bytes, entries
	}
	rc := n.raft.ReloadableConfig()
	want, move := logSizing(rc, n.cfg, m.lastSnapBytes.Load(), avg)
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
		"trailing_logs", want.TrailingLogs, "last_snapshot_bytes", m.lastSnapBytes.Load(), "avg_entry_bytes", int(avg))
}

// logSizing is followLogSize's decision: raft's count trigger and
// trailing log for a node configured with cfg whose last snapshot was
// lastSnapBytes long and whose recent entries averaged avgEntry bytes (0:
// not measured, the trailing log stays), and whether either moved far
// enough from the ones in force (current) to reload.
func logSizing(current raft.ReloadableConfig, cfg Config, lastSnapBytes uint64, avgEntry float64) (raft.ReloadableConfig, bool) {
	want := current
	want.SnapshotThreshold = countTrigger(cfg.SnapshotThreshold, lastSnapBytes)
	if avgEntry > 0 {
		want.TrailingLogs = trailingCount(cfg.TrailingLogs, cfg.TrailingLogBytes, avgEntry)
	}
	return want, movedByATenth(current.SnapshotThreshold, want.SnapshotThreshold) || movedByATenth(current.TrailingLogs, want.TrailingLogs)
}

// movedByATenth reports whether want differs from current by a tenth of
// current or more (and at all).
func movedByATenth(current, want uint64) bool {
	d := max(want, current) - min(want, current)
	return d != 0 && d >= current/10
}

// snapshotMeter counts what the fsm applied and what snapshots wrote. Its
// counters are touched by the fsm goroutine (Apply, Snapshot) and by
// Persist; the trigger loop only reads them.
type snapshotMeter struct {
	appliedBytes    atomic.Uint64 // total bytes of command entries applied
	appliedEntries  atomic.Uint64 // command entries applied
	appliedAtSnap   atomic.Uint64 // appliedBytes when the last snapshot was taken
	lastSnapBytes   atomic.Uint64 // size of the last persisted snapshot
	lastPersistNano atomic.Int64  // how long the last Persist took
}

// sinceSnapshot is the log bytes applied since the last snapshot.
func (m *snapshotMeter) sinceSnapshot() uint64 {
	return m.appliedBytes.Load() - m.appliedAtSnap.Load()
}

// due says whether a snapshot should be taken now. stagger (≥ 1) scales
// the trigger so that the members of a cluster, which apply the same log,
// do not all snapshot at the same index (snapshotStagger).
func (m *snapshotMeter) due(minBytes uint64, stagger float64) bool {
	trigger := max(minBytes, uint64(float64(m.lastSnapBytes.Load())*snapshotLogRatio))
	return m.sinceSnapshot() >= uint64(float64(trigger)*stagger)
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
	return staggerOf(n.cfg.ID, ids)
}

// staggerOf is the stagger factor of voter id among voters: 1 + ½·i/n for
// the i-th of n in ID order, 1 for a node that is not a voter.
func staggerOf(id string, voters []string) float64 {
	ids := slices.Sorted(slices.Values(voters))
	i := slices.Index(ids, id)
	if i < 0 {
		return 1
	}
	return 1 + 0.5*float64(i)/float64(len(ids))
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
		if m := &n.rfsm.meter; !m.due(n.cfg.SnapshotLogBytes, 1) || !m.due(n.cfg.SnapshotLogBytes, n.snapshotStagger()) {
			continue
		}
		start := time.Now()
		err := n.raft.Snapshot().Error()
		switch {
		case err == nil:
			n.log.Info("snapshot taken: the log applied since the last one reached the byte trigger",
				"snapshot_bytes", n.rfsm.meter.lastSnapBytes.Load(), "took", time.Since(start).Round(time.Millisecond),
				"persist", time.Duration(n.rfsm.meter.lastPersistNano.Load()).Round(time.Millisecond))
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
		n.rfsm.meter.lastSnapBytes.Load(), time.Duration(n.rfsm.meter.lastPersistNano.Load()).Round(time.Millisecond))
}
