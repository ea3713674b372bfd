package snaptrigger

import (
	"slices"
	"sync/atomic"

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
// the state (CountTrigger).
const (
	DefaultSnapshotLogBytes = 64 << 20
	snapshotLogRatio        = 0.25
)

// snapshotBytesPerEntry scales raft's count trigger with the state: a
// node snapshots by count only after one entry per this many bytes of its
// last snapshot (CountTrigger). A fixed count (65,536 entries) is a few
// megabytes of single-key removes, but at 10 M objects every snapshot is
// 1.7 GB and a core for 20 s or more: measured, under 16 clients' removes
// each of three masters started one every 66–91 s, back to back. At 2 KiB
// per entry a 10 M-object state snapshots by count every ~820 k entries
// (which bounds a restart's replay to as many); small states keep the
// configured floor.
const snapshotBytesPerEntry = 2048

// CountTrigger is raft's SnapshotThreshold for a node whose last snapshot
// was lastSnapBytes long, never below the configured one.
func CountTrigger(configured, lastSnapBytes uint64) uint64 {
	return max(configured, lastSnapBytes/snapshotBytesPerEntry)
}

// DefaultTrailingLogBytes is about how much log a node keeps behind its
// last snapshot (the master's TrailingLogBytes, TrailingCount), for a follower
// that fell a little behind to catch up from instead of a whole snapshot.
const DefaultTrailingLogBytes = 64 << 20

// MinTrailingLogs is the fewest entries TrailingCount keeps.
const MinTrailingLogs = 64

// TrailingCount is raft's TrailingLogs for entries of avgEntry bytes:
// about budget bytes of them, at least MinTrailingLogs, never more than
// the configured count. hashicorp/raft counts the log it keeps behind
// a snapshot in entries, and sexton's entries range from ~100 B (one
// removed key) to tens of KiB (a batch of 256 puts): 10,240 entries of a
// bulk load were ~250 MB of raft.db kept for good, and the log store's
// file stays resident in the master's memory (docs/SCALING.md,
// "Snapshots").
func TrailingCount(configured, budget uint64, avgEntry float64) uint64 {
	if avgEntry <= 0 {
		return configured
	}
	return min(configured, max(MinTrailingLogs, uint64(float64(budget)/avgEntry)))
}

// LogSizes is what a node is configured with for its log: raft's count
// trigger and trailing log as set (floor and ceiling), and the bytes of
// log to keep behind a snapshot (Config.SnapshotThreshold, TrailingLogs,
// TrailingLogBytes of the master).
type LogSizes struct {
	Threshold, Trailing, TrailingBytes uint64
}

// LogSizing is the master's log sizing decision: raft's count trigger and
// trailing log for a node configured with cfg whose last snapshot was
// lastSnapBytes long and whose recent entries averaged avgEntry bytes (0:
// not measured, the trailing log stays), and whether either moved far
// enough from the ones in force (current) to reload.
func LogSizing(current raft.ReloadableConfig, cfg LogSizes, lastSnapBytes uint64, avgEntry float64) (raft.ReloadableConfig, bool) {
	want := current
	want.SnapshotThreshold = CountTrigger(cfg.Threshold, lastSnapBytes)
	if avgEntry > 0 {
		want.TrailingLogs = TrailingCount(cfg.Trailing, cfg.TrailingBytes, avgEntry)
	}
	return want, movedByATenth(current.SnapshotThreshold, want.SnapshotThreshold) || movedByATenth(current.TrailingLogs, want.TrailingLogs)
}

// movedByATenth reports whether want differs from current by a tenth of
// current or more (and at all).
func movedByATenth(current, want uint64) bool {
	d := max(want, current) - min(want, current)
	return d != 0 && d >= current/10
}

// Meter counts what the fsm applied and what snapshots wrote. Its
// counters are touched by the fsm goroutine (Apply, Snapshot) and by
// Persist; the trigger loop only reads them.
type Meter struct {
	AppliedBytes    atomic.Uint64 // total bytes of command entries applied
	AppliedEntries  atomic.Uint64 // command entries applied
	AppliedAtSnap   atomic.Uint64 // appliedBytes when the last snapshot was taken
	LastSnapBytes   atomic.Uint64 // size of the last persisted snapshot
	LastPersistNano atomic.Int64  // how long the last Persist took
}

// SinceSnapshot is the log bytes applied since the last snapshot.
func (m *Meter) SinceSnapshot() uint64 {
	return m.AppliedBytes.Load() - m.AppliedAtSnap.Load()
}

// Due says whether a snapshot should be taken now. stagger (≥ 1) scales
// the trigger so that the members of a cluster, which apply the same log,
// do not all snapshot at the same index (StaggerOf).
func (m *Meter) Due(minBytes uint64, stagger float64) bool {
	trigger := max(minBytes, uint64(float64(m.LastSnapBytes.Load())*snapshotLogRatio))
	return m.SinceSnapshot() >= uint64(float64(trigger)*stagger)
}

// StaggerOf is the stagger factor of voter id among voters: 1 + ½·i/n for
// the i-th of n in ID order, 1 for a node that is not a voter.
func StaggerOf(id string, voters []string) float64 {
	ids := slices.Sorted(slices.Values(voters))
	i := slices.Index(ids, id)
	if i < 0 {
		return 1
	}
	return 1 + 0.5*float64(i)/float64(len(ids))
}
