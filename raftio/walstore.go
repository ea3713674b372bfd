package raftio

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	waltypes "github.com/hashicorp/raft-wal/types"
)

// walStore is raft-wal (--raft-log-store wal) behind a lock that lets it
// be opened anew while the node runs.
//
// Why: raft-wal (v0.4.2) wedges after a full disk. An append that fills
// its tail segment writes the segment's index frame (sealing it) and its
// commit frame, and rotates to a new segment afterwards. A failed write
// of those frames is rolled back, but when the rotation fails (creating
// and preallocating the next file, or the metadata commit), the tail
// stays sealed and no rotation is tried again. Every later append answers
// "segment is sealed", even once the disk has room: the node could never
// append again until restarted, and a cluster whose masters share a disk
// that filled up would stay without a leader (TestWALRecoversFromAFullDisk
// shows it). Opening the WAL again runs its recovery, which finishes the
// rotation; nothing acknowledged is lost, since an append whose commit
// frame was not written was never acknowledged, and recovery ignores it.
//
// So an append that meets ErrSealed reopens the WAL, once there is room
// for a new segment, and is then tried again. Every other call takes the
// read side of the lock, so none ever sees the WAL between the close and
// the open. The WAL's own calls are unchanged otherwise.
type walStore struct {
	dir         string
	segmentSize int
	logger      hclog.Logger

	mu     sync.RWMutex
	wal    *raftwal.WAL       // nil after Close, or after a reopen whose open failed
	meta   *metadb.BoltMetaDB // closed with wal (see openWAL)
	down   error              // why wal is nil
	closed bool               // Close ran: never reopen

	reopens atomic.Int64 // successful reopens, for tests and the log
}

// errWALReopening answers every call while the WAL is closed after a
// reopen whose open failed; the next append tries the open again.
var errWALReopening = errors.New("raft-wal is closed: reopening it after a sealed segment failed")

// errWALClosed answers every call after Close.
var errWALClosed = errors.New("raft-wal closed")

func openWALStore(dir string, segmentSize int, logger hclog.Logger) (*walStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("raft-wal dir: %w", err)
	}
	if segmentSize == 0 {
		segmentSize = DefaultWALSegmentSize
	}
	s := &walStore{dir: dir, segmentSize: segmentSize, logger: logger}
	w, meta, err := s.openWAL()
	if err != nil {
		return nil, err
	}
	s.wal, s.meta = w, meta
	return s, nil
}

// openWAL opens raft-wal in s.dir. The metadata store (a bbolt file, with
// bbolt's file lock) is passed in and closed after the WAL, so that the
// lock is gone before a reopen in the same process whatever the WAL's own
// Close does with it; a second close of it is a no-op.
func (s *walStore) openWAL() (*raftwal.WAL, *metadb.BoltMetaDB, error) {
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(s.dir, raftwal.WithLogger(s.logger), raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(s.segmentSize))
	if err != nil {
		_ = meta.Close()
		return nil, nil, fmt.Errorf("open raft-wal: %w", err)
	}
	return w, meta, nil
}

// Close closes the WAL and its metadata store.
func (s *walStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wal == nil {
		s.closed = true
		return nil
	}
	err := errors.Join(s.wal.Close(), s.meta.Close())
	s.wal, s.meta, s.closed = nil, nil, true
	return err
}

// current runs f on the open WAL under the read lock, or answers why
// there is none.
func (s *walStore) current(f func(w *raftwal.WAL) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return errWALClosed
	}
	if s.wal == nil {
		return fmt.Errorf("%w: %v", errWALReopening, s.down)
	}
	return f(s.wal)
}

// StoreLogs appends; on ErrSealed it reopens the WAL and appends again.
func (s *walStore) StoreLogs(logs []*raft.Log) error {
	var stale *raftwal.WAL
	err := s.current(func(w *raftwal.WAL) error { stale = w; return w.StoreLogs(logs) })
	if !errors.Is(err, waltypes.ErrSealed) && !errors.Is(err, errWALReopening) {
		return err
	}
	if rerr := s.reopen(stale); rerr != nil {
		return fmt.Errorf("%w (reopening raft-wal to recover: %w)", err, rerr)
	}
	return s.current(func(w *raftwal.WAL) error { return w.StoreLogs(logs) })
}

// reopen closes and opens the WAL, unless another call already replaced
// stale (nil: the WAL is closed after a failed open). It opens only when
// the file system has room for two segments (the one recovery may create
// and the next), so that a disk still full leaves the wedged WAL open for
// reads instead of closing it for an open that would fail.
func (s *walStore) reopen(stale *raftwal.WAL) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errWALClosed
	}
	if s.wal != stale {
		return nil
	}
	free, _, err := DirSpace(s.dir)
	if err != nil {
		return fmt.Errorf("free space of %s: %w", s.dir, err)
	}
	if free < 2*uint64(s.segmentSize) {
		// ENOSPC, so that the store guard counts it as the full disk it is.
		return fmt.Errorf("%s has %d bytes free, less than two segments of %d: %w", s.dir, free, s.segmentSize, syscall.ENOSPC)
	}
	if s.wal != nil {
		if err := errors.Join(s.wal.Close(), s.meta.Close()); err != nil {
			s.logger.Warn("closing the sealed raft-wal", "error", err)
		}
		s.wal, s.meta = nil, nil
	}
	w, meta, err := s.openWAL()
	if err != nil {
		s.down = err
		s.logger.Error("reopening raft-wal after a sealed segment failed; the next append tries again", "error", err)
		return err
	}
	s.wal, s.meta, s.down = w, meta, nil
	n := s.reopens.Add(1)
	s.logger.Warn("raft-wal reopened after an append met a sealed segment (a write or rotation failed earlier)", "reopens", n)
	return nil
}

// --- raft.LogStore ---

func (s *walStore) FirstIndex() (i uint64, err error) {
	err = s.current(func(w *raftwal.WAL) (e error) { i, e = w.FirstIndex(); return })
	return i, err
}

func (s *walStore) LastIndex() (i uint64, err error) {
	err = s.current(func(w *raftwal.WAL) (e error) { i, e = w.LastIndex(); return })
	return i, err
}

func (s *walStore) GetLog(index uint64, l *raft.Log) error {
	return s.current(func(w *raftwal.WAL) error { return w.GetLog(index, l) })
}

func (s *walStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *walStore) DeleteRange(lo, hi uint64) error {
	return s.current(func(w *raftwal.WAL) error { return w.DeleteRange(lo, hi) })
}

// IsMonotonic: raft-wal only appends at the end (raft.MonotonicLogStore).
func (s *walStore) IsMonotonic() bool { return true }

// --- raft.StableStore ---

func (s *walStore) Set(key, val []byte) error {
	return s.current(func(w *raftwal.WAL) error { return w.Set(key, val) })
}

func (s *walStore) Get(key []byte) (v []byte, err error) {
	err = s.current(func(w *raftwal.WAL) (e error) { v, e = w.Get(key); return })
	return v, err
}

func (s *walStore) SetUint64(key []byte, val uint64) error {
	return s.current(func(w *raftwal.WAL) error { return w.SetUint64(key, val) })
}

func (s *walStore) GetUint64(key []byte) (v uint64, err error) {
	err = s.current(func(w *raftwal.WAL) (e error) { v, e = w.GetUint64(key); return })
	return v, err
}
