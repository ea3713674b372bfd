package holder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"sexton/api"
	"sexton/holder/crashpoint"
	"sexton/internal/fsys"
)

// streamChunk is the most a streamed value's bytes wait in memory in one
// buffer: the value is read from its source into one such buffer at a
// time and written at its place in the bucket file. Each chunk costs a
// hand-off to a writer goroutine and a blocking write, whose thread
// switches cost more CPU than the bytes at 1 MiB a chunk, so the middle
// of a value goes in streamChunk pieces; its first and last
// streamEdgeChunk bytes go in pieces of their own so the first write
// starts, and the last ends, soon after the bytes arrive.
const (
	streamChunk     = 4 << 20
	streamEdgeChunk = 1 << 20
)

// A value of directMin bytes or more is written with O_DIRECT, bypassing
// the page cache: on a VM whose fresh page-cache pages are expensive to
// touch, copying 16 MiB into them cost the holder more CPU than the disk
// took to write the bytes. Its range starts and ends on directAlign
// boundaries (the last block zero-padded) so every write is aligned. A
// filesystem that refuses O_DIRECT gets ordinary writes. Smaller values
// go through the page cache, where a read right after the put finds them;
// a direct-written value is read back into it (readahead) once its put
// is acknowledged.
const (
	directMin   = 4 << 20
	directAlign = 4096
)

// streamBufs holds directAlign-aligned streamChunk buffers.
var streamBufs = sync.Pool{New: func() any {
	raw := make([]byte, streamChunk+directAlign)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) % directAlign); r != 0 {
		skip = directAlign - r
	}
	b := raw[skip : skip+streamChunk]
	return &b
}}

// putStreamMidValue sits after a streamed value's first chunk is in the
// bucket file and before the rest arrives: a crash there leaves bytes no
// record names.
var putStreamMidValue = crashpoint.New("put.stream-mid-value")

// PutStream stores size bytes read from r as (key, inc), writing them
// into the bucket file as they arrive, never holding more than
// streamChunk of them. It promises what Put does: it returns once the
// bytes and their record are durable, sharing the fdatasync and the
// journal record with every Put and PutStream committed at the same
// time. The checks that need no bytes (key, tenant, size, a tombstoned
// incarnation) come before any byte is written. A source that fails or
// ends early leaves no record; its range is given back (or, when later
// ranges were handed out meanwhile, punched out of the file).
func (s *Store) PutStream(key, tenant string, inc api.ObjectIncarnation, size int64, r io.Reader) error {
	if err := api.ValidKey(key); err != nil {
		return err
	}
	if len(tenant) > api.MaxTenantLen {
		return api.Errorf(api.CodeInvalidParams, "tenant of %d bytes exceeds %d", len(tenant), api.MaxTenantLen)
	}
	if size < 0 {
		return api.Errorf(api.CodeInvalidParams, "negative value size %d", size)
	}
	if size > s.opts.BucketSizeLimit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, s.opts.BucketSizeLimit)
	}
	// The metadata reserve is checked before a byte is written, as for
	// any put; the commit does not count these bytes again.
	if probe := (&putReq{size: size}); len(s.admitPuts([]*putReq{probe})) == 0 {
		return probe.err
	}
	k := objectKey{key, inc}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.inflight.Add(1)
	defer s.inflight.Done()
	s.readBack.putStarted()
	defer s.readBack.putEnded()
	align := int64(1)
	if size >= directMin {
		align = directAlign
	}
	b, off, err := s.reserveStreamLocked(k, size, align)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	req := &putReq{k: k, tenant: tenant, size: size, off: off, span: roundUp(size, align), streamed: true, b: b, done: make(chan struct{})}
	defer s.endStream(req)
	if req.crc, err = s.writeStream(b, off, size, align > 1, r); err != nil {
		return err
	}
	s.putCh <- req
	<-req.done
	if req.err == nil && align > 1 {
		// Read back while puts are idle, so a get soon after the put
		// finds the bytes in memory (readback.go).
		s.readBack.add(b, off, size)
	}
	return req.err
}

// reserveStreamLocked refuses what planBatch would refuse without the
// bytes (a tombstoned incarnation, one at or below its key's floor), then
// hands out size bytes in the open bucket, opening a new one when they
// do not fit. The bucket is kept from GC until endStream.
func (s *Store) reserveStreamLocked(k objectKey, size, align int64) (*bucket, int64, error) {
	if _, dead := s.idx.dead[k]; dead {
		return nil, 0, fmt.Errorf("%w: %q %s", ErrTombstoned, k.key, k.inc)
	}
	if covers(s.floors, k) {
		return nil, 0, fmt.Errorf("%w: %q %s is at or below the key's tombstone floor %s", ErrTombstoned, k.key, k.inc, s.floors[k.key].inc)
	}
	b := s.buckets[s.openID]
	if b == nil || !s.fitsLocked(b, size+2*(align-1)) {
		nb, err := s.createBucketLocked()
		if err != nil {
			return nil, 0, err
		}
		b = nb
	}
	b.streams++
	return b, b.reserveLocked(size, align), nil
}

// streamBuffers is how many streamChunk buffers one streamed value
// uses: one fills from the source (and is summed as it fills) while the
// others are written, by directWriters goroutines at once with O_DIRECT
// (the disk takes more than one write in flight), by one through the
// page cache.
const (
	streamBuffers = 3
	directWriters = 2
)

// nextChunk is how many of the left bytes of a value go in the next
// chunk, given that done of them were taken before: streamEdgeChunk for
// the first chunk and, once no more than streamChunk+streamEdgeChunk
// are left, a chunk that leaves the last streamEdgeChunk on their own;
// streamChunk else. Every chunk but the last is a multiple of
// directAlign, so every write starts aligned.
func nextChunk(done, left int64) int64 {
	switch {
	case done == 0 || left <= streamEdgeChunk:
		return min(left, streamEdgeChunk)
	case left <= streamChunk+streamEdgeChunk:
		return max(directAlign, (left-streamEdgeChunk)/directAlign*directAlign)
	}
	return streamChunk
}

// streamChunkOf is one filled buffer and where its bytes go.
type streamChunkOf struct {
	bp  *[]byte
	n   int
	off int64
}

// writeStream copies size bytes from r to b's file at off and returns
// their CRC-32C. This goroutine reads the source into one buffer,
// summing each piece as it arrives, while writer goroutines write the
// ones before: with O_DIRECT when direct
// (off is aligned and the range reserved up to the next aligned end),
// else through the page cache with writeback started behind them.
func (s *Store) writeStream(b *bucket, off, size int64, direct bool, r io.Reader) (uint32, error) {
	sw := &streamWriter{s: s, b: b, name: s.path(bucketName(b.id)), w: groupWriter{f: b.file, flushed: off}, written: off}
	if direct {
		if f, err := s.fs.OpenFile(sw.name, os.O_WRONLY|syscall.O_DIRECT, 0); err == nil {
			sw.df = f
			defer f.Close()
		}
	}
	free := make(chan *[]byte, streamBuffers)
	for range streamBuffers {
		free <- streamBufs.Get().(*[]byte)
	}
	full := make(chan streamChunkOf, 1)
	writers := 1
	if sw.df != nil {
		writers = directWriters
	}
	werr := make(chan error, writers)
	for range writers {
		go func() {
			var err error
			for c := range full {
				if err == nil {
					err = sw.write((*c.bp)[:c.n], c.off)
					if err != nil {
						sw.failed.Store(true)
					}
				}
				free <- c.bp
			}
			werr <- err
		}()
	}
	var crc uint32
	var rerr error
	end := off + size
	for first := true; off < end && !sw.failed.Load(); first = false {
		bp := <-free
		n := int(nextChunk(size-(end-off), end-off))
		m, sum, err := readSummed(r, (*bp)[:n], crc)
		crc = sum
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			rerr = fmt.Errorf("%w: reading the value (%d of %d bytes arrived): %w", api.ErrUnavailable, size-(end-off)+int64(m), size, err)
			free <- bp
			break
		}
		full <- streamChunkOf{bp: bp, n: m, off: off}
		off += int64(m)
		if first && off < end {
			putStreamMidValue.Hit()
		}
	}
	close(full)
	var err error
	for range writers {
		if e := <-werr; err == nil {
			err = e
		}
	}
	for range streamBuffers {
		streamBufs.Put(<-free)
	}
	s.mu.Lock()
	b.fileSize = max(b.fileSize, sw.written)
	s.mu.Unlock()
	if err != nil {
		return 0, classifyIOError(err)
	}
	return crc, rerr
}

// streamWriter writes one streamed value's chunks, from one goroutine or
// (O_DIRECT) several.
type streamWriter struct {
	s      *Store
	b      *bucket
	name   string
	failed atomic.Bool

	mu      sync.Mutex
	df      fsys.File // the O_DIRECT handle, or nil
	w       groupWriter
	written int64 // the file reaches at least this far
}

// write writes v at off: with O_DIRECT, zero-padded to the next aligned
// end, while the filesystem takes it, else through the page cache.
func (sw *streamWriter) write(v []byte, off int64) error {
	sw.mu.Lock()
	df := sw.df
	sw.mu.Unlock()
	if df != nil {
		padded := int(roundUp(int64(len(v)), directAlign))
		full := v[:padded]
		clear(full[len(v):])
		_, err := df.WriteAt(full, off)
		sw.mu.Lock()
		defer sw.mu.Unlock()
		if err == nil {
			sw.written = max(sw.written, off+int64(padded))
			return nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("holder: write to %s at %d: %w", sw.name, off, err)
		}
		// The filesystem took the flag but not the write: the rest goes
		// through the page cache.
		sw.df = nil
	} else {
		sw.mu.Lock()
		defer sw.mu.Unlock()
	}
	if err := sw.w.write(v, off); err != nil {
		return fmt.Errorf("holder: write to %s at %d: %w", sw.name, off, err)
	}
	sw.written = max(sw.written, off+int64(len(v)))
	return nil
}

// endStream ends a stream's hold on its bucket. A stream whose record
// was not committed (it failed, or the object was there already) gives
// its range back, or punches it out of the file when later ranges were
// handed out meanwhile, so its bytes take no disk space.
func (s *Store) endStream(r *putReq) {
	b := r.b
	s.mu.Lock()
	b.streams--
	b.pending--
	hole := !r.committed && !b.unreserveLocked(r.off, r.off+r.span)
	s.mu.Unlock()
	if hole && r.span > 0 {
		if err := s.fs.PunchHole(b.file, r.off, r.span); err != nil {
			s.log.Warn("could not punch out an uncommitted streamed value; its bytes stay until GC rewrites the bucket",
				"bucket", b.id, "offset", r.off, "size", r.size, "err", err)
		}
	}
}

// readSummed fills p from r as io.ReadFull does and adds each piece to
// crc as it arrives, while the piece is still in the CPU's cache: summing
// the whole chunk afterwards, or on another goroutine, reads it back from
// memory. It returns how many bytes were read and the CRC over them.
func readSummed(r io.Reader, p []byte, crc uint32) (int, uint32, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		crc = crc32cUpdate(crc, p[n:n+m])
		n += m
		if err != nil {
			if err == io.EOF && n > 0 && n < len(p) {
				err = io.ErrUnexpectedEOF
			}
			if n == len(p) {
				err = nil
			}
			return n, crc, err
		}
	}
	return n, crc, nil
}
