package fsys

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OS is the real filesystem.
type OS struct{}

var _ FS = OS{}

// OpenFile implements FS.
func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Rename implements FS.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// ReadDir implements FS.
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Stat implements FS.
func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// MkdirAll implements FS.
func (OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

// SyncDir implements FS: open the directory read-only and fsync it.
func (OS) SyncDir(name string) error {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return &fs.PathError{Op: "fsync", Path: name, Err: err}
	}
	return nil
}

// Lock implements FS with flock(LOCK_EX|LOCK_NB). flock locks belong to the
// open file description, so a second Lock from this process fails too.
func (OS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%s: %w", name, ErrLocked)
		}
		return nil, &fs.PathError{Op: "flock", Path: name, Err: err}
	}
	return f, nil
}

// Statfs implements FS with statfs(2).
func (OS) Statfs(path string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Space{}, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	bs := st.Frsize
	if bs <= 0 {
		bs = st.Bsize
	}
	return Space{Total: int64(st.Blocks) * bs, Free: int64(st.Bavail) * bs}, nil
}

// Fallocate implements FS with fallocate(2) mode 0 on the file's
// descriptor.
func (OS) Fallocate(f File, size int64) error {
	return fallocate(f, "fallocate", 0, 0, size)
}

// PunchHole implements FS with fallocate(2) FALLOC_FL_PUNCH_HOLE |
// FALLOC_FL_KEEP_SIZE on the file's descriptor.
func (OS) PunchHole(f File, off, size int64) error {
	return fallocate(f, "punch hole", unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, size)
}

// fallocate runs fallocate(2) with mode over [off, off+size) of f's
// descriptor, again after EINTR; op names the operation in its errors.
// A size of zero or less does nothing.
func fallocate(f File, op string, mode uint32, off, size int64) error {
	x, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return &fs.PathError{Op: op, Path: f.Name(), Err: unix.ENOTSUP}
	}
	if size <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(int(x.Fd()), mode, off, size)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: op, Path: f.Name(), Err: err}
		}
		return nil
	}
}
