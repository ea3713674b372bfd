package holder

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// gcCleanup is a round whose on-disk cleanup has not finished. For a
// COMMITTED intent: drain the sources' readers, unlink their files, fsync
// the directory, remove the intent. For a PREPARED one (an abort that
// could not finish): remove the target's files and the intent. Every step
// is idempotent, so a failed attempt is simply repeated by a later pass;
// no new round starts while one is pending (one intent file, one round).
type gcCleanup struct {
	intent      *gcIntent
	sources     []*bucket // committed rounds: retired, files maybe still open
	needDirSync bool      // the COMMITTED rename's directory fsync failed
	freed       int64     // bytes of the sources' files
	written     int64     // bytes of the target's files
}

// finishCleanup runs (or retries) the pending cleanup. drain bounds the
// wait for readers of the sources.
func (s *Store) finishCleanup(drain time.Duration) error {
	c := s.gcPending
	if c == nil {
		return nil
	}
	if c.intent.State == gcPrepared {
		if c.intent.Target != 0 {
			if err := s.removeBucketFiles(c.intent.Target); err != nil {
				return err
			}
			if err := syncGCAbortDir.dir(s.fs, s.dir); err != nil {
				return fmt.Errorf("holder: GC abort: fsync %s: %w", s.dir, err)
			}
		}
		if err := s.removeGCIntent(); err != nil {
			return err
		}
		s.gcPending = nil
		return nil
	}
	if c.needDirSync {
		// COMMITTED must be durable before any source disappears, or a
		// crash could find sources gone and the intent still PREPARED.
		if err := syncGCCommitDirRetry.dir(s.fs, s.dir); err != nil {
			return fmt.Errorf("holder: GC: fsync %s to make COMMITTED durable: %w", s.dir, err)
		}
		c.needDirSync = false
	}
	if err := s.drainReaders(c.sources, drain); err != nil {
		return err
	}
	gcAfterDrain.Hit()
	s.mu.Lock()
	for _, b := range c.sources {
		if b.file != nil {
			_ = b.file.Close()
			b.file = nil
		}
		if b.jFile != nil {
			_ = b.jFile.Close()
			b.jFile = nil
		}
	}
	s.mu.Unlock()
	for i, b := range c.sources {
		if err := s.removeBucketFiles(b.id); err != nil {
			return err
		}
		if i == 0 {
			gcAfterFirstUnlink.Hit()
		}
	}
	gcAfterUnlink.Hit()
	if err := syncGCUnlinkDir.dir(s.fs, s.dir); err != nil {
		return fmt.Errorf("holder: GC: fsync %s after unlinking sources %v: %w", s.dir, c.intent.Sources, err)
	}
	gcAfterDirFsync.Hit()
	if err := s.removeGCIntent(); err != nil {
		return err
	}
	gcAfterIntentRemoved.Hit()
	s.mu.Lock()
	kept := s.retired[:0]
	for _, b := range s.retired {
		if !containsBucket(c.sources, b) {
			kept = append(kept, b)
		}
	}
	s.retired = kept
	s.gcStats.BucketsUnlinked += int64(len(c.sources))
	s.gcStats.BytesReclaimed += c.freed - c.written
	s.gcStats.CleanupPending = false
	s.mu.Unlock()
	s.gcPending = nil
	return nil
}

func containsBucket(bs []*bucket, b *bucket) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// removeBucketFiles unlinks a bucket's metadata (first: without it the
// journal and the data are orphans that start-up removes), tmp metadata,
// journal and data.
func (s *Store) removeBucketFiles(id uint64) error {
	for _, n := range []string{metaName(id), metaTmpName(id), journalName(id), bucketName(id)} {
		if err := s.fs.Remove(s.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("holder: GC: unlink %s: %w", s.path(n), err)
		}
	}
	return nil
}

// errGCDrainTimeout: readers of a committed round's sources did not finish
// in time; the unlink is retried by a later pass.
var errGCDrainTimeout = errors.New("holder: GC: readers of the source buckets did not drain in time")

// drainReaders waits until no read pins any of bs, at most d. Sources are
// out of the bucket map already, so no new read can pin them.
func (s *Store) drainReaders(bs []*bucket, d time.Duration) error {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		n := 0
		for _, b := range bs {
			n += b.readers
		}
		if n == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: %d reads still pin sources %v after %v", errGCDrainTimeout, n, bucketIDs(bs), d)
		}
		s.cond.Wait()
	}
}

func bucketIDs(bs []*bucket) []uint64 {
	out := make([]uint64, len(bs))
	for i, b := range bs {
		out[i] = b.id
	}
	return out
}
