package holder

import (
	"sync"

	"sexton/internal/fsys"
)

// bucket is one <id>.bucket + <id>.meta pair in memory.
type bucket struct {
	id   uint64
	file fsys.File

	// persistMu serializes every rewrite of this bucket's metadata (a put
	// commit, a tombstone batch, later a GC switch), so each starts from the
	// committed copy and none loses another's change. Held across the whole
	// copy → write tmp → fsync → rename → fsync dir sequence.
	persistMu sync.Mutex

	// Guarded by Store.mu (and replaced only while persistMu is held):
	meta         *BucketMetadata // committed: equal to what <id>.meta says
	states       []recordState   // per slot of meta.Objects
	fileSize     int64           // bytes in <id>.bucket, uncommitted tail included
	metaFileSize int64
	liveBytes    int64
	deadBytes    int64
	liveCount    int
	deadCount    int
	shadowed     int    // slots in stateShadowed (counted in deadCount too)
	born         uint64 // Store.putClock when its data was written (GC age)
	legacy       bool
	readers      int // in-flight reads pinning the file
	// retired: a committed GC round replaced this bucket; it is out of
	// Store.buckets and its files go once its readers drain. A put planned
	// for it before it was sealed must not append to it.
	retired bool
	// jFile is the put journal (<id>.journal) of a bucket puts append to,
	// opened O_RDWR; nil for a bucket that takes no puts. jEnd is the end
	// of its last fdatasynced record (guarded by Store.mu, changed under
	// persistMu); jDirty says a failed append may have left bytes past it
	// (persistMu).
	jFile  fsys.File
	jEnd   int64
	jDirty bool
	// reserved is the end of the ranges handed out for appends and
	// streams not yet committed (Store.mu); pending counts those records.
	// Below max(reserved, meta.DataSize) nothing is handed out twice.
	reserved int64
	pending  int
	// streams counts PutStreams holding a range in this bucket until
	// their commit ends; GC leaves such a bucket alone.
	streams int
	// punched holds the tombstoned slots whose bytes punchDead gave back
	// to the filesystem (in memory only: punching again is harmless).
	punched map[int]bool
}

// recount recomputes the byte and record counters from meta and states.
func (b *bucket) recount() {
	b.liveBytes, b.deadBytes, b.liveCount, b.deadCount, b.shadowed = 0, 0, 0, 0, 0
	for i := range b.meta.Objects {
		if b.states[i] == stateShadowed {
			b.shadowed++
		}
		if b.states[i] == stateLive {
			b.liveBytes += b.meta.Objects[i].Size
			b.liveCount++
		} else {
			b.deadBytes += b.meta.Objects[i].Size
			b.deadCount++
		}
	}
}

// appendEnd is where the next reservation starts.
func (b *bucket) appendEnd() int64 { return max(b.reserved, b.meta.DataSize) }

// reserveLocked hands out size bytes at the append end for one record,
// starting at a multiple of align and taking a multiple of it (align 1:
// exactly size bytes where the last record ends).
func (b *bucket) reserveLocked(size, align int64) int64 {
	off := roundUp(b.appendEnd(), align)
	b.reserved = off + roundUp(size, align)
	b.pending++
	return off
}

func roundUp(n, align int64) int64 { return (n + align - 1) / align * align }

// unreserveLocked gives back the range [off, end) of records that were
// not committed, when it is the last one handed out. It reports whether
// it did; otherwise the range stays a hole no record refers to.
func (b *bucket) unreserveLocked(off, end int64) bool {
	if b.reserved != end || off < b.meta.DataSize {
		return false
	}
	b.reserved = off
	return true
}
