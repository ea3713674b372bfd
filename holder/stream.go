package holder

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"sexton/api"
	"sexton/holder/crashpoint"
)

// streamChunk is the most a streamed value's bytes wait in memory: the
// value is read from its source into one such buffer at a time and
// written at its place in the bucket file.
const streamChunk = 1 << 20

var streamBufs = sync.Pool{New: func() any { b := make([]byte, streamChunk); return &b }}

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
	k := objectKey{key, inc}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.inflight.Add(1)
	defer s.inflight.Done()
	b, off, err := s.reserveStreamLocked(k, size)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	req := &putReq{k: k, tenant: tenant, size: size, off: off, streamed: true, b: b, done: make(chan struct{})}
	defer s.endStream(req)
	if req.crc, err = s.writeStream(b, off, size, r); err != nil {
		return err
	}
	s.putCh <- req
	<-req.done
	return req.err
}

// reserveStreamLocked refuses what planBatch would refuse without the
// bytes (a tombstoned incarnation, one at or below its key's floor), then
// hands out size bytes in the open bucket, opening a new one when they
// do not fit. The bucket is kept from GC until endStream.
func (s *Store) reserveStreamLocked(k objectKey, size int64) (*bucket, int64, error) {
	if _, dead := s.idx.dead[k]; dead {
		return nil, 0, fmt.Errorf("%w: %q %s", ErrTombstoned, k.key, k.inc)
	}
	if covers(s.floors, k) {
		return nil, 0, fmt.Errorf("%w: %q %s is at or below the key's tombstone floor %s", ErrTombstoned, k.key, k.inc, s.floors[k.key].inc)
	}
	b := s.buckets[s.openID]
	if b == nil || !s.fitsLocked(b, size) {
		nb, err := s.createBucketLocked()
		if err != nil {
			return nil, 0, err
		}
		b = nb
	}
	b.streams++
	return b, b.reserveLocked(size), nil
}

// writeStream copies size bytes from r to b's file at off in chunks,
// starting writeback behind them, and returns their CRC-32C.
func (s *Store) writeStream(b *bucket, off, size int64, r io.Reader) (uint32, error) {
	bp := streamBufs.Get().(*[]byte)
	defer streamBufs.Put(bp)
	buf := *bp
	var crc uint32
	end := off + size
	w := groupWriter{f: b.file, flushed: off}
	defer func() {
		s.mu.Lock()
		b.fileSize = max(b.fileSize, off)
		s.mu.Unlock()
	}()
	for first := true; off < end; first = false {
		n := int(min(int64(len(buf)), end-off))
		m, err := io.ReadFull(r, buf[:n])
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("%w: reading the value (%d of %d bytes arrived): %w", api.ErrUnavailable, size-(end-off)+int64(m), size, err)
		}
		crc = crc32cUpdate(crc, buf[:m])
		if err := w.write(buf[:m], off); err != nil {
			return 0, classifyIOError(fmt.Errorf("holder: write to %s at %d: %w", s.path(bucketName(b.id)), off, err))
		}
		off += int64(m)
		if first && off < end {
			putStreamMidValue.Hit()
		}
	}
	return crc, nil
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
	hole := !r.committed && !b.unreserveLocked(r.off, r.off+r.size)
	s.mu.Unlock()
	if hole && r.size > 0 {
		if err := s.fs.PunchHole(b.file, r.off, r.size); err != nil {
			s.log.Warn("could not punch out an uncommitted streamed value; its bytes stay until GC rewrites the bucket",
				"bucket", b.id, "offset", r.off, "size", r.size, "err", err)
		}
	}
}
