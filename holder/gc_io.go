package holder

import (
	"golang.org/x/sys/unix"

	"sexton/internal/fsys"
)

// The copy loop is synchronous through one buffer; these two hints let the
// kernel overlap the disk's work with it without any more user memory:
// readahead of the source range about to be copied, and early writeback of
// target bytes already written (so the final fsync has little left to do).
// Both are advisory: on a file that is not an OS file, or on error,
// nothing happens and the copy is merely slower.

// gcReadahead is how far ahead of the copy the source is prefetched.
const gcReadahead = 8 << 20

// gcWritebackEvery is how many target bytes accumulate before writeback
// of them is started.
const gcWritebackEvery = 8 << 20

type fdFile interface{ Fd() uintptr }

func adviseWillNeed(f fsys.File, off, n int64) {
	if x, ok := f.(fdFile); ok && n > 0 {
		_ = unix.Fadvise(int(x.Fd()), off, n, unix.FADV_WILLNEED)
	}
}

func startWriteback(f fsys.File, off, n int64) {
	if x, ok := f.(fdFile); ok && n > 0 {
		_ = unix.SyncFileRange(int(x.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}
}

// copyRuns splits the planned records into runs [i, j): records of one
// source adjacent in its file, read and written as one range.
func copyRuns(recs []gcRecord) [][2]int {
	var runs [][2]int
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].src == recs[i].src && recs[j].obj.Offset == recs[j-1].obj.Offset+recs[j-1].obj.Size {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return runs
}

// readahead keeps the runs about to be copied, up to gcReadahead bytes
// ahead of the copy, prefetched into the page cache. Only live ranges are
// prefetched: dead bytes between them are never read.
type readahead struct {
	recs   []gcRecord
	runs   [][2]int
	next   int   // first run not yet advised
	ahead  int64 // bytes advised so far
	copied int64 // bytes copied so far
}

func newReadahead(recs []gcRecord, runs [][2]int) *readahead {
	return &readahead{recs: recs, runs: runs}
}

// advance is called before run r is copied.
func (ra *readahead) advance(r int) {
	ra.next = max(ra.next, r)
	for ra.next < len(ra.runs) && ra.ahead-ra.copied < gcReadahead {
		i, j := ra.runs[ra.next][0], ra.runs[ra.next][1]
		start := ra.recs[i].obj.Offset
		n := ra.recs[j-1].obj.Offset + ra.recs[j-1].obj.Size - start
		adviseWillNeed(ra.recs[i].src.file, start, n)
		ra.ahead += n
		ra.next++
	}
}
