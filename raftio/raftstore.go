package raftio

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

	"sexton/internal/fsys"
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

// Where each kind keeps its log in a data dir.
const (
	BoltDBFileName = "raft.db"
	WALDirName     = "raft-wal"
)

// MigrateLogStoreCommand is the verb that moves a stopped node's log from
// one kind of store to the other; errors about the kind name it.
const MigrateLogStoreCommand = "sexton operator raft migrate-log-store"

// LogStore is a master's Raft log and stable store, kept in its data dir:
// raft.db for boltdb, raft-wal/ for wal. The master, `sexton bench raft`
// and `sexton debug raft-append` all open it here, so they agree on the
// layout of a data dir.
type LogStore struct {
	Kind   string // the kind opened: LogStoreBoltDB or LogStoreWAL
	Logs   raft.LogStore
	Stable raft.StableStore
	Close  func() error
	// Reopens counts the times the store was opened anew while running
	// (raft-wal after a full disk, walStore); nil for boltdb.
	Reopens func() int64
}

// LogStoreOptions say which log store to open and how.
type LogStoreOptions struct {
	// Kind is LogStoreBoltDB, LogStoreWAL, or "": the kind the data dir
	// holds, and raft-wal for a data dir that holds neither (ChooseLogStore).
	Kind string
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

// CheckWALSegmentSize refuses a segment size outside the bounds (0 is
// the default).
func CheckWALSegmentSize(n int) error {
	if n != 0 && (n < MinWALSegmentSize || n > MaxWALSegmentSize) {
		return fmt.Errorf("--raft-wal-segment-size %d outside [%d, %d]", n, MinWALSegmentSize, MaxWALSegmentSize)
	}
	return nil
}

// OpenLogStore opens (creating if needed) the log store opts name in
// dir (ChooseLogStore). A nil logger leaves the store's own default.
func OpenLogStore(dir string, opts LogStoreOptions, logger hclog.Logger) (*LogStore, error) {
	kind, _, err := ChooseLogStore(dir, opts.Kind)
	if err != nil {
		return nil, err
	}
	return OpenLogStoreAt(kind, StorePath(dir, kind), opts.WALSegmentSize, logger)
}

// StorePath is where a log store of kind lives in dir.
func StorePath(dir, kind string) string {
	if kind == LogStoreWAL {
		return filepath.Join(dir, WALDirName)
	}
	return filepath.Join(dir, BoltDBFileName)
}

// OpenLogStoreAt opens (creating if needed) a log store of kind at path:
// raft.db's file or raft-wal's directory, or a migration's temporary one.
func OpenLogStoreAt(kind, path string, walSegmentSize int, logger hclog.Logger) (*LogStore, error) {
	switch kind {
	case LogStoreWAL:
		if err := CheckWALSegmentSize(walSegmentSize); err != nil {
			return nil, err
		}
		if logger == nil {
			logger = hclog.Default().Named("wal") // raft-wal's own default
		}
		w, err := openWALStore(path, walSegmentSize, logger)
		if err != nil {
			return nil, err
		}
		return &LogStore{Kind: kind, Logs: w, Stable: w, Close: w.Close, Reopens: w.reopens.Load}, nil
	case LogStoreBoltDB:
		b, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: boltOptions()})
		if err != nil {
			return nil, fmt.Errorf("open raft-boltdb: %w", err)
		}
		return &LogStore{Kind: kind, Logs: b, Stable: b, Close: b.Close}, nil
	}
	return nil, fmt.Errorf("--raft-log-store %q: want %s or %s", kind, LogStoreBoltDB, LogStoreWAL)
}

// ChooseLogStore says which kind of log store to open in dir for the
// kind asked (--raft-log-store; "" when not given), and which kind dir
// already holds ("" for none). Not given, it is the kind on disk, and
// raft-wal for a data dir without a log. A kind given that contradicts
// the log on disk is refused: opening it would start this node with an
// empty log beside its real one, its term, vote and entries forgotten,
// which in a cluster can undo an election this node voted in and,
// bootstrapped alone, starts a new cluster on an old data dir.
func ChooseLogStore(dir, kind string) (chosen, onDisk string, err error) {
	switch kind {
	case "", LogStoreBoltDB, LogStoreWAL:
	default:
		return "", "", fmt.Errorf("--raft-log-store %q: want %s or %s", kind, LogStoreBoltDB, LogStoreWAL)
	}
	onDisk, err = DetectLogStore(dir)
	if err != nil {
		return "", "", err
	}
	switch {
	case kind == "" && onDisk == "":
		return LogStoreWAL, "", nil
	case kind == "":
		return onDisk, onDisk, nil
	case onDisk != "" && onDisk != kind:
		return "", onDisk, fmt.Errorf("%w: %s holds a %s log (%s) and --raft-log-store is %s: start without the flag or with --raft-log-store %s to keep it, or stop the node and run `%s --data-dir %s --to %s` to move it, or move the data dir away to start this node empty",
			ErrOtherLogStore, dir, onDisk, StorePath(dir, onDisk), kind, onDisk, MigrateLogStoreCommand, dir, kind)
	}
	return kind, onDisk, nil
}

// DetectLogStore says which kind of log store dir holds: LogStoreBoltDB
// (raft.db), LogStoreWAL (a raft-wal/ with anything in it), or "" for
// neither. Both is refused: only a migration that stopped between
// putting the new store in place and moving the old one aside leaves
// that, and migrate-log-store finishes it.
func DetectLogStore(dir string) (string, error) {
	bolt, wal, err := logStoresIn(dir)
	if err != nil {
		return "", fmt.Errorf("raft log store: %w", err)
	}
	switch {
	case bolt && wal:
		return "", fmt.Errorf("%w: %s holds both a boltdb log (%s) and a raft-wal log (%s/), as a log store migration that stopped before its end leaves it; with the node stopped, run `%s --data-dir %s --to KIND` again with the kind it was moving to: it checks that both hold the same log and moves the other aside",
			ErrOtherLogStore, dir, BoltDBFileName, WALDirName, MigrateLogStoreCommand, dir)
	case bolt:
		return LogStoreBoltDB, nil
	case wal:
		return LogStoreWAL, nil
	}
	return "", nil
}

// logStoresIn says whether dir holds a boltdb log and a raft-wal log (an
// empty raft-wal/ holds none).
func logStoresIn(dir string) (bolt, wal bool, err error) {
	if bolt, err = exists(StorePath(dir, LogStoreBoltDB)); err != nil {
		return false, false, err
	}
	ents, err := os.ReadDir(StorePath(dir, LogStoreWAL))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, false, err
	}
	return bolt, len(ents) > 0, nil
}

// exists says whether name exists.
func exists(name string) (bool, error) {
	_, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// ErrOtherLogStore: the data dir holds the log of another store kind than
// the one asked for, or of both kinds.
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
