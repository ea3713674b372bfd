package raftio

import (
	"golang.org/x/sys/unix"

	"sexton/internal/fsys"
)

// snapWriteBehind is how many bytes of a snapshot being written may wait
// in the page cache before their writeback is started (writeBehind).
const snapWriteBehind = 8 << 20

// writeBehind paces a long sequential write, a snapshot's state file (1.7
// GB at 10 M objects), to the disk. Left to itself the kernel lets a
// whole snapshot pile up as dirty pages and then writes it back in
// bursts, during which every fsync on the disk waits behind it (the Raft
// log's fdatasyncs among them), and the page cache fills with snapshots
// the master will not read again, so the writes themselves end up
// reclaiming memory. Here, once a chunk is in the file its writeback is
// started (sync_file_range WRITE), the chunk before it is waited for and
// dropped from the page cache (fadvise DONTNEED): about two chunks are
// ever dirty, the writer goes at the disk's pace, and a snapshot does
// not push the masters' other pages out of the cache. Measured at 10 M
// objects (docs/SCALING.md, "Snapshots"): a forced snapshot took 13.8 s
// on a follower and 12.4 s on the leader before, 3.1 and 3.8 s after, and
// the removes' p99 during them went from 2.0–3.0× to 1.6× the idle p99.
// The price: a snapshot sent to a follower is read from the disk, not
// the cache (the wiped follower of run V took 33 s, 16–18 s before).
//
// It is a pacing hint, not durability: the sink still fsyncs the file
// before it commits. On a file without a descriptor (the tests' modelled
// filesystems), or after any error from the hints, it does nothing.
type writeBehind struct {
	fd      int   // -1: off
	chunk   int64 // bytes per sync_file_range
	started int64 // writeback started for [0, started)
	dropped int64 // waited for and dropped from the cache for [0, dropped)
}

func newWriteBehind(f fsys.File, chunk int64) *writeBehind {
	x, ok := f.(interface{ Fd() uintptr })
	if !ok || chunk <= 0 {
		return &writeBehind{fd: -1}
	}
	return &writeBehind{fd: int(x.Fd()), chunk: chunk}
}

// wrote says the file now holds its first n bytes.
func (w *writeBehind) wrote(n int64) {
	for w.fd >= 0 && n-w.started >= w.chunk {
		if err := unix.SyncFileRange(w.fd, w.started, w.chunk, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			w.fd = -1
			return
		}
		if prev := w.started - w.dropped; prev > 0 {
			const wait = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
			if err := unix.SyncFileRange(w.fd, w.dropped, prev, wait); err != nil {
				w.fd = -1
				return
			}
			_ = unix.Fadvise(w.fd, w.dropped, prev, unix.FADV_DONTNEED)
			w.dropped = w.started
		}
		w.started += w.chunk
	}
}
