package master

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"sexton/holder/fsys"
)

// raftLogCacheEntries is how many recent log entries raft.LogCache keeps
// in memory: enough for the replication of a few hundred entries in flight
// (at most ~25 KiB each, a bench load batch) to read none back from disk.
const raftLogCacheEntries = 512

// CachedLogs is what raft is given as its log store: logs behind a
// raft.LogCache, because replication reads back the entries it has just
// written (a bbolt read transaction each: 4 % of the leader's CPU under 16
// clients' removes). The cache goes above anything that inspects the
// store's errors: it wraps them with %q and loses their type. The master
// and `sexton bench raft` both use it, so the bench measures the master's
// Raft.
func CachedLogs(logs raft.LogStore) raft.LogStore {
	c, err := raft.NewLogCache(raftLogCacheEntries, logs)
	if err != nil {
		panic(err) // only for a capacity ≤ 0
	}
	return c
}

// SnapshotsRetained is how many snapshots a master keeps on disk.
const SnapshotsRetained = 3

// OpenSnapshotStore opens (creating if needed) a master's snapshot store,
// <dataDir>/snapshots (snapstore.go), keeping SnapshotsRetained snapshots,
// and removes what crashed snapshots left there. Open the log store first:
// it locks the data dir. The master and `sexton bench raft` both open it
// here.
func OpenSnapshotStore(dataDir string, logger hclog.Logger) (*SnapshotStore, error) {
	return openSnapshotStore(fsys.OS{}, dataDir, SnapshotsRetained, logger, nil)
}

// Log store kinds (--raft-log-store).
const (
	LogStoreBoltDB = "boltdb"
	LogStoreWAL    = "wal"
)

// LogStore is a master's Raft log and stable store, kept in its data dir:
// raft.db for boltdb, raft-wal/ for wal. The master, `sexton bench raft`
// and `sexton debug raft-append` all open it here, so they agree on the
// layout of a data dir.
type LogStore struct {
	Logs   raft.LogStore
	Stable raft.StableStore
	Close  func() error
	// Reopens counts the times the store was opened anew while running
	// (raft-wal after a full disk, walStore); nil for boltdb.
	Reopens func() int64
}

// LogStoreOptions say which log store to open and how.
type LogStoreOptions struct {
	Kind string // LogStoreBoltDB (also "") or LogStoreWAL
	// WALSegmentSize is the size of raft-wal's segment files in bytes;
	// 0 takes raft-wal's default, DefaultWALSegmentSize. Each segment is
	// preallocated whole, so a data dir needs room for two of them.
	WALSegmentSize int
}

// raft-wal segment sizes a master accepts (--raft-wal-segment-size).
// raft-wal addresses a segment with 32-bit offsets; below a few entries a
// segment would rotate at every append.
const (
	DefaultWALSegmentSize = 64 << 20 // raft-wal's DefaultSegmentSize
	MinWALSegmentSize     = 64 << 10
	MaxWALSegmentSize     = 1 << 30
)

// checkWALSegmentSize refuses a segment size outside the bounds (0 is
// the default).
func checkWALSegmentSize(n int) error {
	if n != 0 && (n < MinWALSegmentSize || n > MaxWALSegmentSize) {
		return fmt.Errorf("--raft-wal-segment-size %d outside [%d, %d]", n, MinWALSegmentSize, MaxWALSegmentSize)
	}
	return nil
}

// OpenLogStore opens (creating if needed) the log store opts name in
// dir. A nil logger leaves the store's own default.
func OpenLogStore(dir string, opts LogStoreOptions, logger hclog.Logger) (*LogStore, error) {
	if err := checkNoOtherLogStore(dir, opts.Kind); err != nil {
		return nil, err
	}
	switch opts.Kind {
	case LogStoreWAL:
		if err := checkWALSegmentSize(opts.WALSegmentSize); err != nil {
			return nil, err
		}
		if logger == nil {
			logger = hclog.Default().Named("wal") // raft-wal's own default
		}
		w, err := openWALStore(filepath.Join(dir, "raft-wal"), opts.WALSegmentSize, logger)
		if err != nil {
			return nil, err
		}
		return &LogStore{Logs: w, Stable: w, Close: w.Close, Reopens: w.reopens.Load}, nil
	case LogStoreBoltDB, "":
		b, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), BoltOptions: boltOptions()})
		if err != nil {
			return nil, fmt.Errorf("open raft-boltdb: %w", err)
		}
		return &LogStore{Logs: b, Stable: b, Close: b.Close}, nil
	}
	return nil, fmt.Errorf("--raft-log-store %q: want %s or %s", opts.Kind, LogStoreBoltDB, LogStoreWAL)
}

// checkNoOtherLogStore refuses to open a log store of kind in dir when dir
// already holds the other kind's log. Opening it anyway would start this
// node with an empty log beside its real one: its term, vote and entries
// forgotten, which in a cluster can undo an election this node voted in
// and, bootstrapped alone, starts a new cluster on an old data dir.
func checkNoOtherLogStore(dir, kind string) error {
	other, otherKind := filepath.Join(dir, "raft-wal"), LogStoreWAL
	if kind == LogStoreWAL {
		other, otherKind = filepath.Join(dir, "raft.db"), LogStoreBoltDB
	}
	switch fi, err := os.Stat(other); {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("raft log store: %w", err)
	case fi.IsDir():
		if ents, err := os.ReadDir(other); err != nil {
			return fmt.Errorf("raft log store: %w", err)
		} else if len(ents) == 0 {
			return nil // an empty raft-wal/ holds no log
		}
	}
	return fmt.Errorf("%w: %s holds a %s log (%s); start with --raft-log-store %s, or move the data dir away to start this node empty", ErrOtherLogStore, dir, otherKind, other, otherKind)
}

// ErrOtherLogStore: the data dir holds the log of the other store kind.
var ErrOtherLogStore = errors.New("raft log store of another kind in the data dir")

// boltOptions are bbolt's options for raft.db. bbolt's defaults keep the
// free-page list as a sorted array and write it to disk in every commit:
// after log compaction raft.db holds hundreds of megabytes of free pages,
// and every append then merges and rewrites that whole array. Profiled at
// 400k objects that was two thirds of the leader's allocation and most of
// its GC time, and the commit rate fell by two thirds as the state grew.
// The hashmap freelist allocates in O(1), and not syncing it makes each
// commit write only the pages it changed; the price is that opening the
// file scans it once to rebuild the free list (a sequential read of
// raft.db at start). The timeout makes a second process opening the same
// raft.db fail after a second instead of waiting on its lock forever.
func boltOptions() *bbolt.Options {
	return &bbolt.Options{
		Timeout:        1 * time.Second,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	}
}

// RaftConfig is the hashicorp/raft configuration of a master with cfg
// (zero fields take the master's defaults).
func RaftConfig(cfg Config) *raft.Config {
	cfg.setDefaults()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = cfg.Logger.Named("raft")
	// Buffer the apply channel so concurrent proposals reach the leader
	// loop together and share one log write.
	rc.BatchApplyCh = true
	// Raft reports each AppendEntries' timing twice, once with the
	// follower as a label and once in the key, for old dashboards;
	// RaftTimings reads the labelled one.
	rc.NoLegacyTelemetry = true
	return rc
}

// NewRaftTransport is NewRaftTransportWithAuth without authentication:
// plain TCP, as `sexton bench raft` measures it.
func NewRaftTransport(addr string, logger hclog.Logger) (*raft.NetworkTransport, error) {
	return NewRaftTransportWithAuth(addr, RaftAuth{}, logger)
}

// NewRaftTransportWithAuth is a master's Raft transport: TCP on addr (bind
// and advertise), every connection authenticated as auth says (see
// raftstream.go) before hashicorp/raft's own RPC format flows over it.
//
// Pipelined replication is off (MaxRPCsInFlight 1), a workaround for a
// hang: in hashicorp/raft v1.7 and v1.8 a follower answering Success=false (a log
// mismatch, as after a leader change or a user restore) can end the
// pipeline's decoder while its sender parks on an unbuffered channel
// forever. Replication to that follower then stops for good while
// heartbeats go on, and Shutdown hangs waiting for the parked sender.
func NewRaftTransportWithAuth(addr string, auth RaftAuth, logger hclog.Logger) (*raft.NetworkTransport, error) {
	stream, err := newRaftStream(addr, auth, logger)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 5, Timeout: 5 * time.Second, Logger: logger, MaxRPCsInFlight: 1,
	}), nil
}
