package holder

import (
	"fmt"
	"os"
)

// persistMeta makes m the committed metadata of bucket id: write
// <id>.meta.tmp → fsync → rename over <id>.meta → fsync the directory. It
// returns the size of the new file. On any error before the rename the old
// .meta is untouched and the tmp is removed (best effort); the caller must
// then leave its in-memory state unchanged.
func (s *Store) persistMeta(id uint64, m *BucketMetadata, pts persistPoints) (int64, error) {
	data, err := encodeMeta(m)
	if err != nil {
		return 0, fmt.Errorf("holder: encode metadata of bucket %d: %w", id, err)
	}
	return s.persistFile(metaTmpName(id), metaName(id), data, pts)
}

// persistFile makes data the content of finalName in the store directory
// by the same sequence: tmpName, fsync, rename, directory fsync.
func (s *Store) persistFile(tmpName, finalName string, data []byte, pts persistPoints) (int64, error) {
	tmp, final := s.path(tmpName), s.path(finalName)
	pts.beforeTmpWrite.Hit()
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("holder: create %s: %w", tmp, err)
	}
	fail := func(step string, err error) (int64, error) {
		_ = f.Close()
		_ = s.fs.Remove(tmp)
		return 0, fmt.Errorf("holder: %s %s: %w", step, tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	pts.afterTmpWrite.Hit()
	if err := pts.tmpSync.file(f); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		_ = s.fs.Remove(tmp)
		return 0, fmt.Errorf("holder: close %s: %w", tmp, err)
	}
	pts.afterTmpFsync.Hit()
	if err := s.fs.Rename(tmp, final); err != nil {
		_ = s.fs.Remove(tmp)
		return 0, fmt.Errorf("holder: rename %s over %s: %w", tmp, final, err)
	}
	pts.afterRename.Hit()
	if err := pts.dirSync.dir(s.fs, s.dir); err != nil {
		return 0, fmt.Errorf("holder: fsync directory %s after installing %s: %w", s.dir, final, err)
	}
	pts.afterDirFsync.Hit()
	return int64(len(data)), nil
}
