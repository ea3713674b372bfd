package fsys

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// ErrLocked is returned by FS.Lock when another process (or another open
// handle in this process) already holds the lock.
var ErrLocked = errors.New("fsys: lock is held by another process")

// File is an open file. Reads and writes are positional so concurrent
// readers never share a file offset with the appender.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	// Sync flushes the file's data and metadata to stable storage (fsync).
	Sync() error
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Name is the path the file was opened with.
	Name() string
}

// FS is every file operation the store performs.
type FS interface {
	// OpenFile opens or creates name with os.OpenFile flags.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename atomically replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Stat describes a path.
	Stat(name string) (fs.FileInfo, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string, perm fs.FileMode) error
	// SyncDir fsyncs a directory so entries created, renamed or removed in
	// it survive a crash.
	SyncDir(name string) error
	// Lock takes an exclusive, non-blocking advisory lock
	// (flock(LOCK_EX|LOCK_NB)) on name, creating it if needed. It fails at
	// once with an error wrapping ErrLocked if the lock is held. Closing the
	// returned Closer releases the lock.
	Lock(name string) (io.Closer, error)
	// Statfs describes the space of the filesystem holding path.
	Statfs(path string) (Space, error)
	// Fallocate makes sure f has size bytes allocated from offset zero
	// (fallocate(2) mode 0): the blocks are taken now, so later writes
	// into them cannot fail for lack of space. The file grows to size if
	// it is shorter. It fails with ENOSPC when the space is not there.
	Fallocate(f File, size int64) error
	// PunchHole deallocates size bytes of f at off (fallocate(2)
	// FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE): the file keeps its
	// size, the range reads as zeros, and the whole blocks inside it go
	// back to the filesystem. A filesystem that cannot punch holes fails
	// with an error wrapping ENOTSUP or EOPNOTSUPP.
	PunchHole(f File, off, size int64) error
}

// Space is what statfs(2) says about a filesystem.
type Space struct {
	// Total is the filesystem's size in bytes (f_blocks × f_frsize).
	Total int64
	// Free is the bytes an unprivileged writer can still allocate
	// (f_bavail × f_frsize): blocks reserved for root are not counted,
	// because the holder should not depend on running as root.
	Free int64
}

// ReadFile reads a whole file through fsys, refusing files larger than
// limit before allocating anything.
func ReadFile(fsys FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, &FileTooLargeError{Name: name, Size: st.Size(), Limit: limit}
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return nil, err
	}
	return buf, nil
}

// ErrFileTooLarge matches a *FileTooLargeError with errors.Is.
var ErrFileTooLarge = errors.New("fsys: file exceeds the size limit")

// FileTooLargeError says a file was refused by ReadFile because of its size.
type FileTooLargeError struct {
	Name        string
	Size, Limit int64
}

func (e *FileTooLargeError) Error() string {
	return "fsys: " + e.Name + " is larger than the limit of its kind"
}

// Is makes errors.Is(err, ErrFileTooLarge) true.
func (e *FileTooLargeError) Is(target error) bool { return target == ErrFileTooLarge }
