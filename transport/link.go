package transport

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// lastFrameTimeout bounds the write of a final go-away frame, so a peer that
// does not read cannot hold a closing connection open.
const lastFrameTimeout = time.Second

// writeBatchFrames bounds how many queued frames one writev carries.
const writeBatchFrames = 64

// link is the part of a connection that client and server share: the
// buffered read side, a single writer goroutine that batches queued frames
// into one writev, and a once-only shutdown that records why.
type link struct {
	nc           net.Conn
	br           *bufio.Reader
	frameTimeout time.Duration
	coalesce     bool // nc is TLS: copy small batches into one write

	out           chan *frameBuf
	closing       chan struct{}
	writerStarted atomic.Bool
	writerDone    chan struct{}

	closeOnce sync.Once
	mu        sync.Mutex
	reason    error
	last      *frameBuf
}

func newLink(nc net.Conn, frameTimeout time.Duration) *link {
	return &link{
		nc:           nc,
		br:           bufio.NewReaderSize(nc, 64<<10),
		frameTimeout: frameTimeout,
		coalesce:     isTLS(nc),
		out:          make(chan *frameBuf, writeBatchFrames),
		closing:      make(chan struct{}),
		writerDone:   make(chan struct{}),
	}
}

// read reads the next frame, bounded by limit.
func (l *link) read(limit int) ([]byte, error) {
	return readFrame(l.nc, l.br, limit, l.frameTimeout)
}

// writeDirect writes one frame synchronously; only for the handshake,
// before the writer goroutine runs.
func (l *link) writeDirect(buf *frameBuf, deadline time.Time) error {
	defer releaseFrame(buf)
	if err := l.nc.SetWriteDeadline(deadline); err != nil {
		return err
	}
	return buf.writeTo(l.nc)
}

// startWriter starts the goroutine that owns the write side from now on.
func (l *link) startWriter() {
	l.writerStarted.Store(true)
	go l.writeLoop()
}

func (l *link) writeLoop() {
	defer close(l.writerDone)
	defer l.nc.Close()
	batch := make([]*frameBuf, 0, writeBatchFrames)
	bufs := make(net.Buffers, 0, 2*writeBatchFrames)
	var joined []byte
	for {
		select {
		case <-l.closing:
			if last := l.takeLast(); last != nil {
				_ = l.nc.SetWriteDeadline(time.Now().Add(lastFrameTimeout))
				_ = last.writeTo(l.nc)
				releaseFrame(last)
			}
			return
		case buf := <-l.out:
			batch = append(batch[:0], buf)
		drain:
			for len(batch) < writeBatchFrames {
				select {
				case more := <-l.out:
					batch = append(batch, more)
				default:
					break drain
				}
			}
			if l.frameTimeout > 0 {
				_ = l.nc.SetWriteDeadline(time.Now().Add(l.frameTimeout))
			}
			var err error
			if len(batch) == 1 && len(batch[0].tail) == 0 {
				_, err = l.nc.Write(batch[0].Bytes())
			} else if total := batchLen(batch); l.coalesce && total <= coalesceLimit {
				joined = joined[:0]
				for _, b := range batch {
					joined = append(joined, b.Bytes()...)
					for _, p := range b.tail {
						joined = append(joined, p...)
					}
				}
				_, err = l.nc.Write(joined)
			} else {
				bufs = bufs[:0]
				for _, b := range batch {
					bufs = append(bufs, b.Bytes())
					for _, p := range b.tail {
						if len(p) > 0 {
							bufs = append(bufs, p)
						}
					}
				}
				w := bufs // WriteTo consumes its receiver
				_, err = w.WriteTo(l.nc)
			}
			for _, b := range batch {
				releaseFrame(b)
			}
			if err != nil {
				l.shutdown(errWrite{err}, nil)
				return
			}
		}
	}
}

// errWrite marks a failure of the write side.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "write: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

var errLinkClosed = errors.New("connection closed")

// send queues a frame for the writer. It gives up when the link closes or
// cancel fires. On success the writer owns buf; on failure send releases it.
func (l *link) send(buf *frameBuf, cancel <-chan struct{}) error {
	select {
	case <-l.closing:
		releaseFrame(buf)
		return l.err()
	default:
	}
	select {
	case l.out <- buf:
		return nil
	case <-l.closing:
		releaseFrame(buf)
		return l.err()
	case <-cancel:
		releaseFrame(buf)
		return errCanceled
	}
}

// trySend is send that does not wait: it reports false, keeping buf for
// the caller, when the writer's queue is full. A closed link takes (and
// releases) the frame.
func (l *link) trySend(buf *frameBuf) bool {
	select {
	case <-l.closing:
		releaseFrame(buf)
		return true
	default:
	}
	select {
	case l.out <- buf:
		return true
	default:
		return false
	}
}

var errCanceled = errors.New("canceled before the frame was queued")

// shutdown closes the link once, remembering reason. A last frame (a
// go-away telling the peer why) is written first, bounded by
// lastFrameTimeout; without one the socket closes at once.
func (l *link) shutdown(reason error, last *frameBuf) {
	first := false
	l.closeOnce.Do(func() {
		first = true
		if reason == nil {
			reason = errLinkClosed
		}
		l.mu.Lock()
		l.reason = reason
		l.last = last
		l.mu.Unlock()
		close(l.closing)
		if !l.writerStarted.Load() {
			if last := l.takeLast(); last != nil {
				_ = l.writeDirect(last, time.Now().Add(lastFrameTimeout))
			}
			l.nc.Close()
			return
		}
		if last == nil {
			l.nc.Close()
		} else {
			// Unblock a stuck write so the writer gets to the last frame.
			_ = l.nc.SetWriteDeadline(time.Now().Add(lastFrameTimeout))
		}
	})
	if !first {
		releaseFrame(last)
	}
}

func (l *link) takeLast() *frameBuf {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.last
	l.last = nil
	return last
}

// err is why the link closed (nil while open).
func (l *link) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

// wait blocks until the writer (if it ran) has exited and the socket is
// closed.
func (l *link) wait() {
	if l.writerStarted.Load() {
		<-l.writerDone
	}
}

func batchLen(batch []*frameBuf) int {
	n := 0
	for _, b := range batch {
		n += b.size()
	}
	return n
}

// writeTo writes the whole frame, its tail included, to nc.
func (f *frameBuf) writeTo(nc net.Conn) error {
	if len(f.tail) == 0 {
		_, err := nc.Write(f.Bytes())
		return err
	}
	w := append(net.Buffers{f.Bytes()}, f.tail...)
	_, err := w.WriteTo(nc)
	return err
}
