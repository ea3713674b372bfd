package holder

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"sexton/api"
	"sexton/internal/fsys"
)

const (
	// putQueueLen bounds Puts waiting for the committer.
	putQueueLen = 1024
	// maxCommitBatch bounds the Puts one commit covers, so a batch's data
	// stays a few MiB at typical object sizes.
	maxCommitBatch = 256
)

// putReq is one Put waiting for the committer.
type putReq struct {
	k      objectKey
	tenant string
	value  []byte
	size   int64
	crc    uint32
	err    error
	done   chan struct{}
	// alias is an earlier request of the same batch for the same object
	// and bytes: this one gets that one's outcome.
	alias *putReq
	// off is where the value goes in its bucket, reserved by planBatch,
	// or by PutStream for a streamed value, whose range is span bytes.
	off  int64
	span int64
	// streamed: PutStream already wrote the value at off in bucket b;
	// the commit only makes it durable and records it.
	streamed bool
	b        *bucket
	// committed: the record is in the index (set by commitGroup).
	committed bool
}

// Large values are written in putWriteChunk pieces, and writeback of
// every putWritebackEvery bytes written is started at once
// (sync_file_range WRITE), so the disk works while the rest of the batch
// is copied into the page cache and the commit's fdatasync finds little
// left to write. Small values are written whole.
const (
	putWriteChunk     = 4 << 20
	putWritebackEvery = 8 << 20
)

// groupWriter appends a commit group's values to a bucket file.
type groupWriter struct {
	f       fsys.File
	flushed int64 // writeback started up to here
}

// write writes v at off in chunks and starts writeback behind it.
func (w *groupWriter) write(v []byte, off int64) error {
	for len(v) > 0 {
		n := min(len(v), putWriteChunk)
		if _, err := w.f.WriteAt(v[:n], off); err != nil {
			return err
		}
		v, off = v[n:], off+int64(n)
		if off-w.flushed >= putWritebackEvery {
			startWriteback(w.f, w.flushed, off-w.flushed)
			w.flushed = off
		}
	}
	return nil
}

// Put stores value as (key, inc). It returns once the bytes and the
// metadata describing them are durable: data fsync, then the metadata
// persisted tmp → fsync → rename → directory fsync. Concurrent Puts share
// those fsyncs (group commit). Putting a live (key, inc) again with the
// same bytes is a no-op; with other bytes it is ErrConflict. An
// incarnation this segment has tombstoned is refused (ErrTombstoned), and
// so is any incarnation at or below its key's tombstone floor.
func (s *Store) Put(key, tenant string, inc api.ObjectIncarnation, value []byte) error {
	if err := api.ValidKey(key); err != nil {
		return err
	}
	if len(tenant) > api.MaxTenantLen {
		return api.Errorf(api.CodeInvalidParams, "tenant of %d bytes exceeds %d", len(tenant), api.MaxTenantLen)
	}
	if int64(len(value)) > s.opts.BucketSizeLimit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(value), s.opts.BucketSizeLimit)
	}
	r := &putReq{k: objectKey{key, inc}, tenant: tenant, value: value, size: int64(len(value)), crc: crc32c(value), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	s.readBack.putStarted()
	defer s.readBack.putEnded()
	s.putCh <- r
	<-r.done
	return r.err
}

// committer is the one goroutine that appends: it takes every Put queued
// while the previous commit ran and commits them together.
func (s *Store) committer() {
	defer close(s.committerD)
	for first := range s.putCh {
		batch := []*putReq{first}
	drain:
		for len(batch) < maxCommitBatch {
			select {
			case r, ok := <-s.putCh:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
		for _, r := range batch {
			if r.alias != nil {
				r.err = r.alias.err
			}
			close(r.done)
		}
	}
}

// commitGroup is the part of a batch that goes to one bucket.
type commitGroup struct {
	b    *bucket
	reqs []*putReq
	size int64 // value bytes of reqs
	// streamed: the reqs' values are in the file already (PutStream);
	// otherwise they are appended contiguously from reqs[0].off.
	streamed bool
}

// commitBatch plans where each request goes, then commits bucket by bucket.
func (s *Store) commitBatch(batch []*putReq) {
	// Held from the floor check in planBatch to the index install: a
	// tombstone that finds one of these records absent waits, then finds
	// it live (see recordAbsent).
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	groups := s.planBatch(s.admitPuts(batch))
	s.testHook(hookPutPlanned)
	s.commitGroups(groups, maxReplans)
}

// maxReplans bounds how often a batch is planned again because GC replaced
// the bucket it was planned for.
const maxReplans = 3

func (s *Store) commitGroups(groups []*commitGroup, replans int) {
	for _, g := range groups {
		err := s.commitGroup(g)
		if !g.streamed {
			s.settleGroup(g, err)
		}
		if err == nil {
			continue
		}
		if errors.Is(err, errBucketRetired) && replans > 0 {
			// GC sealed and replaced the bucket between planning and
			// appending: nothing was written; plan these records again
			// (into the new open bucket) instead of failing the puts.
			s.commitGroups(s.planBatch(g.reqs), replans-1)
			continue
		}
		if isNoSpace(err) {
			s.noteNoSpace(spacePathPut)
			s.warnLimited("put-enospc", "disk full: put commit failed (NO_SPACE)", "bucket", g.b.id, "records", len(g.reqs), "err", err)
			s.wantSpace()
		} else {
			s.log.Error("put commit failed", "bucket", g.b.id, "records", len(g.reqs), "err", err)
		}
		err = classifyIOError(err)
		for _, r := range g.reqs {
			r.err = err
		}
	}
}

// planBatch answers what needs no I/O (duplicates, conflicts, tombstoned
// incarnations) and assigns the rest to buckets, rolling to a new bucket
// when the open one would exceed a limit.
func (s *Store) planBatch(batch []*putReq) []*commitGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var groups []*commitGroup
	streamGroups := map[*bucket]*commitGroup{}
	inBatch := make(map[objectKey]*putReq, len(batch))
	var cur *commitGroup
	for _, r := range batch {
		if loc, ok := s.idx.live[r.k]; ok {
			if loc.size != r.size || loc.crc != r.crc {
				r.err = fmt.Errorf("%w: %q %s is stored with other bytes", ErrConflict, r.k.key, r.k.inc)
			}
			continue
		}
		if _, dead := s.idx.dead[r.k]; dead {
			r.err = fmt.Errorf("%w: %q %s", ErrTombstoned, r.k.key, r.k.inc)
			continue
		}
		if covers(s.floors, r.k) {
			r.err = fmt.Errorf("%w: %q %s is at or below the key's tombstone floor %s", ErrTombstoned, r.k.key, r.k.inc, s.floors[r.k.key].inc)
			continue
		}
		if prev, ok := inBatch[r.k]; ok {
			if prev.size != r.size || prev.crc != r.crc {
				r.err = fmt.Errorf("%w: %q %s is being stored with other bytes", ErrConflict, r.k.key, r.k.inc)
			} else {
				r.alias = prev
			}
			continue
		}
		inBatch[r.k] = r
		if r.streamed {
			// Its bytes are in r.b already: it joins that bucket's
			// group of streamed records, outside the appended range.
			g := streamGroups[r.b]
			if g == nil {
				g = &commitGroup{b: r.b, streamed: true}
				streamGroups[r.b] = g
				groups = append(groups, g)
			}
			g.reqs = append(g.reqs, r)
			g.size += r.size
			continue
		}
		b := s.buckets[s.openID]
		if cur == nil || cur.b != b {
			cur = nil
		}
		if b == nil || !s.fitsLocked(b, r.size) {
			nb, err := s.createBucketLocked()
			if err != nil {
				r.err = err
				delete(inBatch, r.k)
				continue
			}
			b, cur = nb, nil
		}
		if cur == nil {
			cur = &commitGroup{b: b}
			groups = append(groups, cur)
		}
		r.off = b.reserveLocked(r.size, 1)
		cur.reqs = append(cur.reqs, r)
		cur.size += r.size
	}
	return groups
}

// fitsLocked reports whether a record of size bytes still fits bucket b
// after its committed records and those reserved in it (planned in this
// batch or being streamed).
func (s *Store) fitsLocked(b *bucket, size int64) bool {
	return len(b.meta.Objects)+b.pending+1 <= s.opts.BucketKeysLimit && b.appendEnd()+size <= s.opts.BucketSizeLimit
}

// createBucketLocked creates the next bucket's data file and makes it the
// open bucket. It has no .meta until its first commit; a crash before that
// leaves an orphan data file with no committed record, removed at start.
func (s *Store) createBucketLocked() (*bucket, error) {
	id := s.nextID
	name := s.path(bucketName(id))
	f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("holder: create %s: %w", name, err)
	}
	s.nextID++
	s.putClock++
	b := &bucket{id: id, file: f, meta: &BucketMetadata{V: metaVersionCurrent, BucketID: id}, born: s.putClock}
	s.buckets[id] = b
	s.openID = id
	return b, nil
}

// commitGroup appends a group's values to its bucket and fdatasyncs them,
// then makes the records' metadata durable: one journal record and its
// fdatasync for a bucket that has its .meta, or, for a bucket's first
// commit, the whole .meta (tmp → fsync → rename → directory fsync, which
// also makes the new data and journal files' directory entries durable).
// Only then does the index show the records.
func (s *Store) commitGroup(g *commitGroup) error {
	b := g.b
	b.persistMu.Lock()
	defer b.persistMu.Unlock()

	s.mu.Lock()
	if b.retired {
		// A GC round sealed and replaced this bucket after the batch was
		// planned; appending now would put acknowledged bytes in a file
		// that is about to be unlinked.
		s.mu.Unlock()
		return fmt.Errorf("%w: bucket %d was replaced by GC while the put was queued; retry", errBucketRetired, b.id)
	}
	cur := b.meta
	journal := b.jFile != nil && b.metaFileSize > 0
	// Small values travel in the journal record too: one fdatasync (the
	// journal's) makes data and metadata durable, and open writes the
	// values back if the bucket file lost them.
	inline := journal && !g.streamed && g.size <= s.inlineMax && b.jEnd < journalInlineBudget
	s.mu.Unlock()

	base := g.reqs[0].off
	off := base
	defer func() {
		// Even a failed commit may have grown the file; Usage counts it.
		s.mu.Lock()
		b.fileSize = max(b.fileSize, off)
		s.mu.Unlock()
	}()
	objs := make([]ObjectMeta, 0, len(g.reqs))
	w := groupWriter{f: b.file, flushed: base}
	for _, r := range g.reqs {
		if !g.streamed {
			if err := w.write(r.value, r.off); err != nil {
				return fmt.Errorf("holder: append to %s at %d: %w", s.path(bucketName(b.id)), r.off, err)
			}
		}
		objs = append(objs, ObjectMeta{
			Key: r.k.key, Tenant: r.tenant, Incarnation: r.k.inc,
			Offset: r.off, Size: r.size, CRC32C: r.crc,
		})
		off = max(off, r.off+r.size)
	}
	putAfterDataWrite.Hit()
	var inlineData []byte
	if inline {
		inlineData = make([]byte, 0, g.size)
		for _, r := range g.reqs {
			inlineData = append(inlineData, r.value...)
		}
	} else {
		synced := time.Now()
		err := syncPutData.data(b.file)
		s.events.observePutSync("data", time.Since(synced))
		if err != nil {
			return fmt.Errorf("holder: fdatasync %s: %w", s.path(bucketName(b.id)), err)
		}
		putAfterDataFsync.Hit()
	}

	// The committed metadata is never changed in place: next shares the
	// committed records' backing array and appends after its end, which no
	// holder of the old value can see (appends are serialized by
	// persistMu, and records are never modified in place).
	next := *cur
	next.Objects = append(cur.Objects[:len(cur.Objects):cap(cur.Objects)], objs...)
	// Records streamed concurrently may commit out of offset order: the
	// committed data size is the furthest end any record reaches.
	next.DataSize = max(cur.DataSize, off)
	first := len(cur.Objects)
	var metaSize int64
	persisted := time.Now()
	defer func() { s.events.observePutSync("meta", time.Since(persisted)) }()
	if journal {
		// An inline record's data size is its own end (the bytes it
		// carries run from its first offset to it); replay takes the
		// largest data size of all records.
		dataSize := next.DataSize
		if inline {
			dataSize = off
		}
		if err := s.appendJournal(b, first, dataSize, objs, inlineData); err != nil {
			return err
		}
	} else {
		if b.jFile == nil && b.metaFileSize == 0 {
			// The journal is created before the first .meta's directory
			// fsync, which makes its entry durable with the bucket's.
			f, err := s.openJournal(b.id)
			if err != nil {
				return err
			}
			b.jFile = f
		}
		n, err := s.persistMeta(b.id, &next, putPoints)
		if err != nil {
			return err
		}
		metaSize = n
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	b.meta = &next
	if !journal {
		b.metaFileSize = metaSize
	}
	for i := first; i < len(next.Objects); i++ {
		o := &next.Objects[i]
		b.states = append(b.states, stateLive)
		s.idx.live[objectKey{o.Key, o.Incarnation}] = location{bucket: b.id, slot: i, offset: o.Offset, size: o.Size, crc: o.CRC32C}
		b.liveBytes += o.Size
		b.liveCount++
	}
	for _, r := range g.reqs {
		r.committed = true
	}
	if journal && b.jEnd >= journalCompactBytes {
		signal(s.gcWake)
	}
	return nil
}

// settleGroup ends the reservations of an appended group: a failed
// group's range is given back when nothing was reserved after it, so
// the next append writes over it, as it would over any uncommitted tail.
func (s *Store) settleGroup(g *commitGroup, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := g.b
	b.pending -= len(g.reqs)
	if err != nil {
		last := g.reqs[len(g.reqs)-1]
		b.unreserveLocked(g.reqs[0].off, last.off+last.size)
	}
}

// classifyIOError gives a failed commit a wire code: a full disk is
// NO_SPACE (the master can place elsewhere), anything else UNAVAILABLE.
func classifyIOError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", api.ErrNoSpace, err)
	}
	return fmt.Errorf("%w: %w", api.ErrUnavailable, err)
}
