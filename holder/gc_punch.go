package holder

import (
	"errors"
	"os"
	"syscall"

	"sexton/internal/fsys"
)

// punchItem is one tombstoned record whose bytes punchDead frees.
type punchItem struct {
	b         *bucket
	slot      int
	off, size int64
}

// punchDead frees, in place, the data blocks of every tombstoned record of
// buckets not freed yet (PunchHole; the files keep their sizes) and
// returns the bytes punched. The worker calls it with the buckets that
// qualify for a round (by the ratio, or any dead record when puts were
// refused or usage is at the high watermark) when no round fits the free
// space: a merge must copy its sources' live bytes before it frees
// anything, which a bucket larger than the free space cannot do, while a
// hole needs no space at all. The freed space lets puts in again and lets
// the merges fit that then reclaim the buckets for good.
//
// Only tombstoned records are punched: their tombstone is durable (the
// state changes only after the .meta rename), nothing reads their bytes
// again (Get refuses them, a round copies live records only, recovery's
// check of a committed target skips them), and a cut that undoes a hole
// only brings dead bytes back, so no fsync is needed. Shadowed duplicates
// are left alone, and so is everything while a committed round's cleanup
// is pending. Runs under gcMu, so no round can retire a bucket meanwhile.
func (w *gcWorker) punchDead(buckets []*bucket) int64 {
	s := w.s
	if w.noPunch {
		return 0
	}
	s.mu.Lock()
	if s.closed || s.gcPending != nil {
		s.mu.Unlock()
		return 0
	}
	var items []punchItem
	for _, b := range buckets {
		if b.retired || w.skip[b.id] {
			continue
		}
		for slot, st := range b.states {
			if st != stateTombstoned || b.punched[slot] {
				continue
			}
			o := &b.meta.Objects[slot]
			if o.Size > 0 {
				items = append(items, punchItem{b: b, slot: slot, off: o.Offset, size: o.Size})
			}
		}
	}
	s.mu.Unlock()
	var punched int64
	// A bucket's own handle may be read-only (every bucket but the last
	// is, after a restart): each bucket is opened for writing here, once.
	var f fsys.File
	var fb *bucket
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	for _, it := range items {
		if w.stopped() {
			break
		}
		if fb != it.b {
			if f != nil {
				_ = f.Close()
				f = nil
			}
			var err error
			if f, err = s.fs.OpenFile(s.path(bucketName(it.b.id)), os.O_WRONLY, 0); err != nil {
				s.noteGCError(err)
				break
			}
			fb = it.b
		}
		if err := s.fs.PunchHole(f, it.off, it.size); err != nil {
			if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) {
				w.noPunch = true
				s.log.Warn("bucket GC: this filesystem cannot punch holes; dead bytes wait for a merge that fits the free space", "err", err)
				break
			}
			s.noteGCError(err)
			break
		}
		punched += it.size
		s.mu.Lock()
		if it.b.punched == nil {
			it.b.punched = map[int]bool{}
		}
		it.b.punched[it.slot] = true
		s.gcStats.BytesPunched += it.size
		s.mu.Unlock()
	}
	if punched > 0 {
		s.log.Info("bucket GC: no merge fits the free space; punched the tombstoned records' bytes out of their buckets",
			"bytes", punched, "records", len(items))
	}
	return punched
}
