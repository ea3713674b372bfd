package holder

import (
	"sync"
	"time"

	"sexton/internal/fsys"
)

// A value written with O_DIRECT is not in the page cache, and a get soon
// after its put would read the disk. Reading it back at the put's ack
// would put 16 MiB of reads on the disk just when the master's Raft log
// fsync that makes the put visible, and the next put's writes, need it
// (docs/SCALING.md, "The write path"). So read-back waits until no put has been in flight for
// readBackIdle, longer than a put's commit takes on a loaded machine (a
// shorter wait lets it run between one client's puts), and reads
// readBackStep bytes at a time, stopping as soon as a put starts. A step
// returns once its reads are done (readBackAdvise), so a put that starts
// finds at most one step's reads ahead of its writes on the disk, not
// everything queued. It is advice: a range whose bucket's file is gone is
// skipped, and at most readBackMax bytes wait (the oldest are dropped
// first).
const (
	readBackIdle = 100 * time.Millisecond
	readBackStep = 4 << 20
	readBackMax  = 1 << 30
)

// readBackRange is a direct-written value's bytes, to be read back.
type readBackRange struct {
	b      *bucket
	off, n int64
}

// readBack queues ranges to read back into the page cache and reads them
// from one goroutine (run) while the store's puts are idle.
type readBack struct {
	mu     sync.Mutex
	queue  []readBackRange
	queued int64
	puts   int       // puts in flight
	last   time.Time // when the last put ended
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}

	idle time.Duration
	// advise reads n bytes of f at off into the page cache.
	advise func(f fsys.File, off, n int64)
}

func newReadBack() *readBack {
	return &readBack{
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		idle: readBackIdle, advise: readBackAdvise,
	}
}

// putStarted and putEnded bracket every put; read-back waits while any
// is in flight and for idle after the last one ended.
func (rb *readBack) putStarted() {
	rb.mu.Lock()
	rb.puts++
	rb.mu.Unlock()
}

func (rb *readBack) putEnded() {
	rb.mu.Lock()
	rb.puts--
	rb.last = time.Now()
	rb.mu.Unlock()
}

// add queues n bytes of b's file at off.
func (rb *readBack) add(b *bucket, off, n int64) {
	rb.mu.Lock()
	rb.queue = append(rb.queue, readBackRange{b: b, off: off, n: n})
	rb.queued += n
	for rb.queued > readBackMax {
		rb.queued -= rb.queue[0].n
		rb.queue[0] = readBackRange{} // no hold on a dropped range's bucket
		rb.queue = rb.queue[1:]
	}
	rb.mu.Unlock()
	signal(rb.wake)
}

// next returns the next step to read, or how long to wait for the puts
// to go idle first; ok is false when nothing is queued.
func (rb *readBack) next() (r readBackRange, wait time.Duration, ok bool) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if len(rb.queue) == 0 {
		return readBackRange{}, 0, false
	}
	if rb.puts > 0 {
		return readBackRange{}, rb.idle, true
	}
	if w := rb.idle - time.Since(rb.last); w > 0 {
		return readBackRange{}, w, true
	}
	head := &rb.queue[0]
	r = readBackRange{b: head.b, off: head.off, n: min(head.n, readBackStep)}
	head.off += r.n
	head.n -= r.n
	rb.queued -= r.n
	if head.n == 0 {
		rb.queue[0] = readBackRange{}
		rb.queue = rb.queue[1:]
	}
	return r, 0, true
}

// runReadBack reads queued ranges back until stop is closed.
func (s *Store) runReadBack() {
	rb := s.readBack
	defer close(rb.done)
	for {
		r, wait, ok := rb.next()
		switch {
		case !ok:
			select {
			case <-rb.wake:
			case <-rb.stop:
				return
			}
		case wait > 0:
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-rb.stop:
				t.Stop()
				return
			}
		default:
			s.readBackStep(r)
		}
	}
}

// readBackStep advises one step, the bucket's file pinned as for a get.
func (s *Store) readBackStep(r readBackRange) {
	s.mu.Lock()
	f := r.b.file
	if f == nil {
		s.mu.Unlock()
		return
	}
	r.b.readers++
	s.mu.Unlock()
	defer s.unpin(r.b)
	s.readBack.advise(f, r.off, r.n)
}

// stopReadBack ends runReadBack; queued ranges are dropped.
func (s *Store) stopReadBack() {
	close(s.readBack.stop)
	<-s.readBack.done
}

// readBackAdvise reads n bytes of f at off into the page cache and
// returns once they are in: FADV_WILLNEED only queues the reads, and a
// loop of such steps would queue every waiting range at once, in front
// of the writes of the next put. Reading the range's last byte waits for
// the readahead's last page, after the others were queued.
func readBackAdvise(f fsys.File, off, n int64) {
	if n <= 0 {
		return
	}
	adviseWillNeed(f, off, n)
	var last [1]byte
	_, _ = f.ReadAt(last[:], off+n-1)
}
