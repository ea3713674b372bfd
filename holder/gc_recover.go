package holder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"sexton/internal/fsys"
)

// gcRecovery is what OpenStore decided about a pending GC intent: which
// bucket ids lose their files, and a line for the open report.
type gcRecovery struct {
	intent *gcIntent
	drop   []uint64
	action string
}

// planGCRecovery resolves a pending intent without changing anything:
// PREPARED drops the target (the sources were never replaced); COMMITTED
// first validates the target completely and then drops the sources. A
// committed target that is missing or fails validation is fatal: the
// sources may be half unlinked, and neither side can be trusted alone.
func planGCRecovery(fs fsys.FS, dir string, sc dirScan) (gcRecovery, error) {
	in, err := readGCIntent(fs, dir)
	if err != nil || in == nil {
		return gcRecovery{}, err
	}
	r := gcRecovery{intent: in}
	switch in.State {
	case gcPrepared:
		r.drop = []uint64{in.Target}
		r.action = fmt.Sprintf("GC intent %s: sources stay authoritative, uncommitted target %d removed", in, in.Target)
	case gcCommitted:
		if in.Target != 0 {
			if err := validateGCTarget(fs, dir, sc, in.Target); err != nil {
				return r, fmt.Errorf("%w: %s (intent %s in %s): %v; refusing to serve",
					ErrGCTargetInvalid, filepath.Join(dir, bucketName(in.Target)), in, filepath.Join(dir, GCIntentFileName), err)
			}
		}
		r.drop = in.Sources
		r.action = fmt.Sprintf("GC intent %s: target %d validated and kept, sources removed", in, in.Target)
	}
	return r, nil
}

// validateGCTarget checks a committed target the way a read would: both
// files present, metadata checksum and bounds, then every record's bytes
// against its CRC-32C, streamed through one buffer. Tombstoned records are
// not read, as no read would: a round copies live records only, so a
// tombstone in the target came later, and once the round's cleanup is done
// the worker may punch such a record's bytes out (punchDead) while a cut
// can still bring the unsynced intent removal back.
func validateGCTarget(fs fsys.FS, dir string, sc dirScan, id uint64) error {
	if !sc.metas[id] || !sc.buckets[id] {
		return fmt.Errorf("missing %s or %s", metaName(id), bucketName(id))
	}
	m, _, _, _, err := loadOne(fs, dir, id)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, bucketName(id))
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, gcCopyBufferSize)
	for i := range m.Objects {
		o := &m.Objects[i]
		if o.Tombstoned {
			continue
		}
		crc, err := crcRange(f, o.Offset, o.Size, buf)
		if err != nil {
			return fmt.Errorf("read record %d (%q) of %s: %w", i, o.Key, name, err)
		}
		if crc != o.CRC32C {
			return fmt.Errorf("%w: record %d (%q) of %s: crc32c %08x, metadata says %08x", ErrCorrupt, i, o.Key, name, crc, o.CRC32C)
		}
	}
	return nil
}

// crcRange is the CRC-32C of size bytes of f at off, read through buf.
func crcRange(f io.ReaderAt, off, size int64, buf []byte) (uint32, error) {
	var crc uint32
	for size > 0 {
		n := min(int64(len(buf)), size)
		got, err := f.ReadAt(buf[:n], off)
		if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
			if errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("%w: truncated at %d", ErrCorrupt, off+int64(got))
			}
			return 0, err
		}
		crc = crc32cUpdate(crc, buf[:n])
		off += n
		size -= n
	}
	return crc, nil
}

// applyGCRecovery removes the dropped buckets' files, fsyncs the
// directory, then removes the intent: once it is gone the round is over.
func (s *Store) applyGCRecovery(r gcRecovery) error {
	if r.intent == nil {
		return nil
	}
	for _, id := range r.drop {
		for _, n := range []string{metaTmpName(id), metaName(id), journalName(id), bucketName(id)} {
			err := s.fs.Remove(s.path(n))
			if err == nil {
				s.rep.RemovedGCFiles = append(s.rep.RemovedGCFiles, n)
			} else if !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("holder: GC recovery: remove %s: %w", s.path(n), err)
			}
		}
	}
	if err := syncGCRecoveryDir.dir(s.fs, s.dir); err != nil {
		return fmt.Errorf("holder: GC recovery: fsync %s: %w", s.dir, err)
	}
	if err := s.removeGCIntent(); err != nil {
		return err
	}
	s.rep.GCRecovery = r.action
	s.rep.GCRecoveredState = r.intent.State.String()
	return nil
}
