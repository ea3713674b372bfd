package holder

import (
	"errors"
	"fmt"
	"io"

	"sexton/api"
)

// Get returns the value of the live record (key, inc). The bytes are
// verified against the record's CRC-32C: a mismatch is an ErrCorrupt error
// naming the bucket and offset, never wrong bytes. An absent or tombstoned
// record is ErrNotFound.
func (s *Store) Get(key string, inc api.ObjectIncarnation) ([]byte, error) {
	return s.GetInto(key, inc, nil)
}

// GetInto is Get reading the value into alloc(size), a slice of exactly
// the value's size (nil alloc: a new slice). Every check is Get's: on an
// error the slice alloc gave holds no value and is not returned.
func (s *Store) GetInto(key string, inc api.ObjectIncarnation, alloc func(size int) []byte) ([]byte, error) {
	k := objectKey{key, inc}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	loc, ok := s.idx.live[k]
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %q %s", ErrNotFound, key, inc)
	}
	b := s.buckets[loc.bucket]
	b.readers++ // pins the file against a later GC unlink
	s.mu.Unlock()
	defer s.unpin(b)

	var buf []byte
	if alloc != nil {
		if buf = alloc(int(loc.size)); int64(len(buf)) != loc.size {
			return nil, fmt.Errorf("holder: read buffer of %d bytes for a value of %d", len(buf), loc.size)
		}
	} else {
		buf = make([]byte, loc.size)
	}
	n, err := b.file.ReadAt(buf, loc.offset)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: bucket %d offset %d: record of %d bytes is truncated to %d", ErrCorrupt, loc.bucket, loc.offset, loc.size, n)
		}
		return nil, fmt.Errorf("holder: read bucket %d offset %d: %w", loc.bucket, loc.offset, err)
	}
	if got := crc32c(buf); got != loc.crc {
		return nil, fmt.Errorf("%w: bucket %d offset %d size %d (%q %s): crc32c %08x, metadata says %08x",
			ErrCorrupt, loc.bucket, loc.offset, loc.size, key, inc, got, loc.crc)
	}
	return buf, nil
}

func (s *Store) unpin(b *bucket) {
	s.mu.Lock()
	b.readers--
	if b.readers == 0 {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}
