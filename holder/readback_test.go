package holder

import (
	"io"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sexton/internal/fsys"
)

// advised records the ranges read back and when.
type advised struct {
	mu     sync.Mutex
	ranges []readBackRange
	at     []time.Time
}

func (a *advised) advise(_ fsys.File, off, n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ranges = append(a.ranges, readBackRange{off: off, n: n})
	a.at = append(a.at, time.Now())
}

func (a *advised) snapshot() ([]readBackRange, []time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]readBackRange(nil), a.ranges...), append([]time.Time(nil), a.at...)
}

// covered is how many bytes of [off, off+n) the advised ranges cover,
// each step at most readBackStep bytes.
func (a *advised) covered(t *testing.T, off, n int64) int64 {
	t.Helper()
	rs, _ := a.snapshot()
	var got int64
	for _, r := range rs {
		if r.n > readBackStep {
			t.Fatalf("one read-back step of %d bytes, more than %d", r.n, readBackStep)
		}
		lo, hi := max(r.off, off), min(r.off+r.n, off+n)
		if hi > lo {
			got += hi - lo
		}
	}
	return got
}

// A direct-written value is read back into the page cache only once no
// put has been in flight for the idle time: not while another value is
// still streaming in, and then all of both values, in bounded steps.
func TestReadBackWaitsForIdlePuts(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	rec := new(advised)
	const idle = 100 * time.Millisecond
	s.readBack.mu.Lock()
	s.readBack.advise, s.readBack.idle = rec.advise, idle
	s.readBack.mu.Unlock()

	size := int64(directMin + 5000)
	mustPutStream(t, s, "a", incN(1), valueOf("a", int(size)))
	pr, pw := io.Pipe()
	defer pw.CloseWithError(io.ErrUnexpectedEOF) // a failed test's put ends before Close
	vb := valueOf("b", int(size))
	errc := make(chan error, 1)
	go func() { errc <- s.PutStream("b", "t", incN(2), size, pr) }()
	if _, err := pw.Write(vb[:streamChunk]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * idle)
	if rs, _ := rec.snapshot(); len(rs) != 0 {
		t.Fatalf("read back %v while a put was streaming in", rs)
	}
	if _, err := pw.Write(vb[streamChunk:]); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	a, b := liveAt(t, s, "a", incN(1)), liveAt(t, s, "b", incN(2))
	deadline := time.Now().Add(10 * time.Second)
	for rec.covered(t, a.offset, a.size)+rec.covered(t, b.offset, b.size) < 2*size {
		if time.Now().After(deadline) {
			rs, _ := rec.snapshot()
			t.Fatalf("read back %v; want all of [%d,+%d) and [%d,+%d)", rs, a.offset, a.size, b.offset, b.size)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, at := rec.snapshot(); at[0].Sub(ended) < idle*8/10 {
		t.Fatalf("first read-back %s after the last put ended, want at least the idle time %s", at[0].Sub(ended), idle)
	}
}

// The queue keeps at most readBackMax bytes, dropping the oldest, and
// hands them out in readBackStep pieces in order; a range whose bucket
// file is gone is skipped.
func TestReadBackQueue(t *testing.T) {
	rb := newReadBack()
	b1, b2 := &bucket{id: 1}, &bucket{id: 2}
	rb.add(b1, 0, readBackMax/2)
	rb.add(b2, 8192, readBackMax/2+readBackStep+1)
	if rb.queued > readBackMax || len(rb.queue) != 1 || rb.queue[0].b != b2 {
		t.Fatalf("queued %d bytes in %d ranges (first of bucket %d); want only the newer range", rb.queued, len(rb.queue), rb.queue[0].b.id)
	}
	off, left := int64(8192), int64(readBackMax/2+readBackStep+1)
	for left > 0 {
		r, wait, ok := rb.next()
		if !ok || wait != 0 || r.b != b2 || r.off != off || r.n != min(left, readBackStep) {
			t.Fatalf("next = %+v wait %s ok %v; want bucket 2 at %d, %d bytes", r, wait, ok, off, min(left, readBackStep))
		}
		off, left = off+r.n, left-r.n
	}
	if _, _, ok := rb.next(); ok || rb.queued != 0 {
		t.Fatalf("after the last step: ok %v, %d bytes queued", ok, rb.queued)
	}
	rb.putStarted()
	rb.add(b1, 0, 100)
	if _, wait, ok := rb.next(); !ok || wait <= 0 {
		t.Fatalf("with a put in flight: wait %s ok %v, want a wait", wait, ok)
	}

	s, _ := openTemp(t)
	defer s.Close()
	rec := new(advised)
	s.readBack.advise = rec.advise
	s.readBackStep(readBackRange{b: &bucket{id: 9}, off: 0, n: 100})
	if rs, _ := rec.snapshot(); len(rs) != 0 {
		t.Fatalf("read back %v of a bucket whose file is gone", rs)
	}
}

// A read-back step returns only once its bytes are in the page cache: a
// step that merely queued its reads would let the next steps queue every
// waiting range at once, in front of the writes of the next put.
func TestReadBackStepWaitsForItsReads(t *testing.T) {
	s, _ := openTemp(t)
	defer s.Close()
	s.readBack.mu.Lock()
	s.readBack.idle = time.Hour // only this test reads back
	s.readBack.mu.Unlock()
	mustPutStream(t, s, "a", incN(1), valueOf("a", readBackStep))
	loc := liveAt(t, s, "a", incN(1))
	s.mu.Lock()
	b := s.buckets[loc.bucket]
	s.mu.Unlock()
	last := loc.offset + loc.size - 1
	if pageResident(t, b.file, last) {
		t.Skip("the value is in the page cache already: this filesystem took no O_DIRECT write")
	}
	s.readBackStep(readBackRange{b: b, off: loc.offset, n: loc.size})
	if !pageResident(t, b.file, last) {
		t.Fatal("a read-back step returned before the last page of its range was read")
	}
	mustGet(t, s, "a", incN(1), valueOf("a", readBackStep))
}

// pageResident says whether the page of f holding byte off is in the
// page cache.
func pageResident(t *testing.T, f fsys.File, off int64) bool {
	t.Helper()
	x, ok := f.(fdFile)
	if !ok {
		t.Skip("the bucket file has no descriptor")
	}
	pg := int64(os.Getpagesize())
	m, err := unix.Mmap(int(x.Fd()), off/pg*pg, int(pg), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	var vec [1]byte
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	return vec[0]&1 == 1
}
