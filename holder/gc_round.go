package holder

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// runRound executes one planned round (docs/DESIGN.md §6):
//
//	PREPARED{sources, target} → copy live records → fsync target data and
//	meta → COMMITTED → switch the index → drain readers → unlink sources →
//	fsync dir → remove intent.
//
// A round without a target (fully dead sources) writes COMMITTED directly.
// Any failure before COMMITTED discards the target and leaves the sources
// authoritative; after COMMITTED the target is authoritative and the
// remaining cleanup is retried by later passes until it completes.
func (w *gcWorker) runRound(p *gcPlan) error {
	s := w.s
	// The round drops the sources' tombstones with their bytes; their
	// floors go to disk first, so the incarnations stay refused.
	// Nothing is on disk yet: a failure needs no undo.
	dead := s.deadInSources(p)
	err := s.raiseFloors(dead, gcFloorPoints)
	if err != nil && s.retryAfterNoSpace(spacePathGCFloor, err) {
		err = s.raiseFloors(dead, gcFloorPoints)
	}
	if err != nil {
		return fmt.Errorf("holder: GC: recording tombstone floors: %w", err)
	}
	in := &gcIntent{State: gcPrepared, Sources: p.sourceIDs(), Target: p.target}
	var tb *bucket
	var tmeta *BucketMetadata
	if p.target != 0 {
		if _, err := s.writeGCIntentSpace(in, gcAfterPrepareTmp); err != nil {
			return s.abortRound(in, nil, err)
		}
		gcAfterPrepare.Hit()
		s.testHook(hookGCAfterPrepare)
		var err error
		if tb, tmeta, err = w.writeTarget(p); err != nil {
			if isNoSpace(err) {
				s.noteNoSpace(spacePathGCData)
			}
			return s.abortRound(in, tb, err)
		}
	}

	// Sources are locked in id order for the commit: no tombstone or put
	// changes them between the check below and the index switch, and a
	// tombstone that waited here finds its record moved and re-resolves.
	for _, b := range p.sources {
		b.persistMu.Lock()
	}
	unlock := func() {
		for _, b := range p.sources {
			b.persistMu.Unlock()
		}
	}
	s.mu.Lock()
	changed := false
	for i, b := range p.sources {
		if s.buckets[b.id] != b || len(b.meta.Objects) != p.srcLens[i] {
			changed = true
		}
	}
	if !changed && tmeta != nil {
		// Tombstones that landed on a source while it was copied are
		// carried into the target: the record is dead wherever it lives.
		for i, r := range p.records {
			if r.src.states[r.slot] != stateLive {
				tmeta.Objects[i].Tombstoned = true
				tmeta.Objects[i].Evicted = s.diedByEvictionLocked(objectKey{r.obj.Key, r.obj.Incarnation}, &r.src.meta.Objects[r.slot])
			}
		}
	}
	s.mu.Unlock()
	if changed {
		unlock()
		s.mu.Lock()
		s.gcStats.Aborted++
		s.mu.Unlock()
		return s.abortRound(in, tb, errGCSourceChanged)
	}
	var metaSize int64
	if tmeta != nil {
		n, err := s.persistMeta(p.target, tmeta, gcTargetMetaPoints)
		if err != nil && s.retryAfterNoSpace(spacePathGCMeta, err) {
			n, err = s.persistMeta(p.target, tmeta, gcTargetMetaPoints)
		}
		if err != nil {
			unlock()
			return s.abortRound(in, tb, err)
		}
		metaSize = n
	}
	in.State = gcCommitted
	renamed, err := s.writeGCIntentSpace(in, gcAfterCommitTmp)
	if err != nil && !renamed {
		unlock()
		in.State = gcPrepared
		return s.abortRound(in, tb, err)
	}
	// Renamed: COMMITTED is on disk even if the directory fsync failed.
	// Treat the round as committed and fsync again before any unlink.
	needDirSync := err != nil
	gcAfterCommit.Hit()

	c := s.switchIndex(p, tb, tmeta, metaSize)
	c.intent = in
	c.needDirSync = needDirSync
	unlock()
	gcAfterIndexSwitch.Hit()
	s.testHook(hookGCAfterCommit)
	s.gcPending = c
	if needDirSync {
		s.noteGCError(fmt.Errorf("holder: GC round committed but directory fsync failed: %w", err))
	}
	return s.finishCleanup(w.opts.DrainTimeout)
}

// deadInSources lists the dead incarnations the round's sources hold:
// tombstoned records, and duplicates a tombstone elsewhere hides. A live
// duplicate hidden only by a newer live copy is not dead and not listed.
func (s *Store) deadInSources(p *gcPlan) []deadKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []deadKey
	for _, b := range p.sources {
		for slot, st := range b.states {
			if st == stateLive {
				continue
			}
			o := &b.meta.Objects[slot]
			k := objectKey{o.Key, o.Incarnation}
			if _, dead := s.idx.dead[k]; st == stateTombstoned || dead || atFloor(s.floors, k) {
				out = append(out, deadKey{k, s.diedByEvictionLocked(k, o)})
			}
		}
	}
	return out
}

// diedByEvictionLocked reports whether every record of k's death here is
// an eviction: its tombstones in the index, a floor entry at exactly its
// incarnation, and own (the record in hand, nil for none) when it is a
// tombstone. No record of a death at all reads as a removal, the safe
// default. Called with s.mu held.
func (s *Store) diedByEvictionLocked(k objectKey, own *ObjectMeta) bool {
	evicted, seen := true, false
	if _, dead := s.idx.dead[k]; dead {
		_, ev := s.idx.evicted[k]
		evicted, seen = evicted && ev, true
	}
	if f, ok := s.floors[k.key]; ok && f.inc == k.inc {
		evicted, seen = evicted && f.evicted, true
	}
	if own != nil && own.Tombstoned {
		evicted, seen = evicted && own.Evicted, true
	}
	return evicted && seen
}

// writeTarget creates the target, streams every planned record into it
// through the worker's buffer, fsyncs it, and returns its metadata (not
// yet persisted).
func (w *gcWorker) writeTarget(p *gcPlan) (*bucket, *BucketMetadata, error) {
	s := w.s
	name := s.path(bucketName(p.target))
	f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("holder: GC: create %s: %w", name, err)
	}
	tb := &bucket{id: p.target, file: f}
	objs, size, err := w.copyRecords(p, tb)
	tb.fileSize = size
	if err != nil {
		return tb, nil, err
	}
	gcAfterCopy.Hit()
	if err := syncGCTargetData.file(f); err != nil {
		return tb, nil, fmt.Errorf("holder: GC: fsync %s: %w", name, err)
	}
	gcAfterTargetDataFsync.Hit()
	s.testHook(hookGCBeforeCommit)
	return tb, &BucketMetadata{V: metaVersionCurrent, BucketID: p.target, DataSize: size, Objects: objs}, nil
}

// copyRecords streams the planned records into the target in runs: records
// adjacent in their source are read and written as one range, in chunks of
// the worker's 1 MiB buffer, and each record's CRC-32C is checked on the
// way (a mismatch fails the round rather than copy bad bytes).
func (w *gcWorker) copyRecords(p *gcPlan, tb *bucket) ([]ObjectMeta, int64, error) {
	s := w.s
	recs := p.records
	objs := make([]ObjectMeta, 0, len(recs))
	var toff, flushed int64
	runs := copyRuns(recs)
	ra := newReadahead(recs, runs)
	for r, run := range runs {
		i, j := run[0], run[1]
		ra.advance(r)
		src := recs[i].src
		start := recs[i].obj.Offset
		end := recs[j-1].obj.Offset + recs[j-1].obj.Size
		cur, remaining := i, recs[i].obj.Size
		var crc uint32
		finish := func() error {
			for cur < j && remaining == 0 {
				r := &recs[cur]
				if crc != r.obj.CRC32C {
					w.skip[src.id] = true
					return fmt.Errorf("%w: GC source bucket %d offset %d (%q %s): crc32c %08x, metadata says %08x; bucket left alone",
						ErrCorrupt, src.id, r.obj.Offset, r.obj.Key, r.obj.Incarnation, crc, r.obj.CRC32C)
				}
				o := r.obj
				o.Offset = toff + (r.obj.Offset - start)
				o.Tombstoned, o.Evicted = false, false
				objs = append(objs, o)
				s.testHook(hookGCCopiedRecord)
				cur++
				crc = 0
				if cur < j {
					remaining = recs[cur].obj.Size
				}
			}
			return nil
		}
		if err := finish(); err != nil {
			return nil, toff, err
		}
		for off := start; off < end; {
			n := min(int64(len(w.buf)), end-off)
			chunk := w.buf[:n]
			got, err := src.file.ReadAt(chunk, off)
			if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
				return nil, toff, fmt.Errorf("holder: GC: read bucket %d at %d: %w", src.id, off, err)
			}
			if _, err := tb.file.WriteAt(chunk, toff+(off-start)); err != nil {
				return nil, toff, fmt.Errorf("holder: GC: write %s at %d: %w", s.path(bucketName(tb.id)), toff+(off-start), err)
			}
			if written := toff + (off - start) + n; written-flushed >= gcWritebackEvery {
				startWriteback(tb.file, flushed, written-flushed)
				flushed = written
			}
			for len(chunk) > 0 {
				take := min(int64(len(chunk)), remaining)
				crc = crc32cUpdate(crc, chunk[:take])
				chunk = chunk[take:]
				remaining -= take
				if err := finish(); err != nil {
					return nil, toff, err
				}
			}
			off += n
		}
		toff += end - start
		ra.copied += end - start
	}
	s.mu.Lock()
	s.gcStats.BytesCopied += toff
	s.mu.Unlock()
	return objs, toff, nil
}

// switchIndex makes the round visible, atomically for readers: under s.mu
// the target joins the buckets and the index points every copied record
// at it; the sources leave the buckets (retired) so no new read pins them.
// A read sees the source or the target, never neither.
func (s *Store) switchIndex(p *gcPlan, tb *bucket, tmeta *BucketMetadata, metaSize int64) *gcCleanup {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &gcCleanup{sources: p.sources}
	if tb != nil {
		tb.meta = tmeta
		tb.metaFileSize = metaSize
		tb.states = make([]recordState, len(tmeta.Objects))
		for i := range tmeta.Objects {
			o := &tmeta.Objects[i]
			k := objectKey{o.Key, o.Incarnation}
			if o.Tombstoned {
				tb.states[i] = stateTombstoned
				s.idx.markDead(k, tb.id, o.Evicted)
				delete(s.idx.live, k)
				continue
			}
			s.idx.live[k] = location{bucket: tb.id, slot: i, offset: o.Offset, size: o.Size, crc: o.CRC32C}
		}
		tb.recount()
		for _, b := range p.sources {
			tb.born = max(tb.born, b.born) // as young as its youngest data
		}
		s.buckets[tb.id] = tb
		c.written = tb.fileSize + metaSize
	}
	for _, b := range p.sources {
		for slot := range b.meta.Objects {
			o := &b.meta.Objects[slot]
			k := objectKey{o.Key, o.Incarnation}
			if b.states[slot] == stateTombstoned && s.idx.dead[k] == b.id {
				s.idx.forget(k) // the tombstone is reclaimed with its bytes
			}
		}
		b.retired = true
		delete(s.buckets, b.id)
		if s.openID == b.id {
			s.openID = 0
		}
		s.retired = append(s.retired, b)
		c.freed += b.fileSize + b.metaFileSize + b.jEnd
	}
	s.gcStats.Rounds++
	if tb != nil {
		s.gcStats.BucketsMerged++
	}
	s.gcStats.CleanupPending = true
	return c
}

// abortRound undoes a round that did not commit: the target's files go,
// then the intent. If that cleanup fails it is left pending (as PREPARED)
// for the next pass; the sources stay authoritative either way.
func (s *Store) abortRound(in *gcIntent, tb *bucket, cause error) error {
	if tb != nil && tb.file != nil {
		_ = tb.file.Close()
		tb.file = nil
	}
	in.State = gcPrepared
	s.gcPending = &gcCleanup{intent: in}
	if err := s.finishCleanup(0); err != nil {
		return fmt.Errorf("%w (and undoing it: %v)", cause, err)
	}
	return cause
}
