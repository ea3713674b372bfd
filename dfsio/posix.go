package dfsio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sexton/api"
)

// Posix is the posix adapter: a directory every node mounts.
type Posix struct {
	root    string
	fsync   bool
	cluster atomic.Uint64 // the cluster the root must belong to (Bind); 0 = any
}

// Open returns the adapter s names, rooted at s.Root.
func Open(s Settings) (*Posix, error) {
	if !s.Enabled() {
		return nil, fmt.Errorf("%w: %s is unset", ErrBadPath, EnvRoot)
	}
	if err := checkAdapter(s.Adapter); err != nil {
		return nil, err
	}
	return &Posix{root: s.Root, fsync: s.Fsync}, nil
}

// Root is the DFS root directory.
func (p *Posix) Root() string { return p.root }

func (p *Posix) path(name string) (string, error) {
	if err := checkPath(name); err != nil {
		return "", err
	}
	return filepath.Join(p.root, name), nil
}

func checkRange(d api.DFSDescriptor, n int) error {
	if d.Offset < 0 || d.Size < 0 || d.Size > d.AlignedSize || int64(n) != d.Size || d.Offset > (1<<62) {
		return fmt.Errorf("%w: %d bytes for offset %d size %d aligned %d", ErrBadRange, n, d.Offset, d.Size, d.AlignedSize)
	}
	return nil
}

// WriteAt writes value at d's offset with pwrite (the padding up to the
// aligned size is never written: the file was preallocated with zeros).
// With MOONCAKE_DFS_FSYNC=1 it fdatasyncs before returning.
func (p *Posix) WriteAt(d api.DFSDescriptor, value []byte) error {
	if err := checkRange(d, len(value)); err != nil {
		return err
	}
	path, err := p.path(d.Path)
	if err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("dfsio: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	off := d.Offset
	for len(value) > 0 {
		n, err := unix.Pwrite(fd, value, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("dfsio: pwrite %s at %d: %w", path, off, err)
		}
		if n == 0 {
			return fmt.Errorf("%w: pwrite %s at %d wrote nothing", ErrShortIO, path, off)
		}
		value, off = value[n:], off+int64(n)
	}
	if p.fsync {
		if err := unix.Fdatasync(fd); err != nil {
			return fmt.Errorf("dfsio: fdatasync %s: %w", path, err)
		}
		synced(path)
	}
	return nil
}

// ReadAt reads d's Size bytes at its offset with pread.
func (p *Posix) ReadAt(d api.DFSDescriptor) ([]byte, error) {
	if d.Size > MaxReadLen {
		return nil, fmt.Errorf("%w: size %d exceeds %d", ErrBadRange, d.Size, MaxReadLen)
	}
	if err := checkRange(d, int(d.Size)); err != nil {
		return nil, err
	}
	path, err := p.path(d.Path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dfsio: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, d.Size)
	got := 0
	for got < len(buf) {
		n, err := unix.Pread(fd, buf[got:], d.Offset+int64(got))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("dfsio: pread %s at %d: %w", path, d.Offset+int64(got), err)
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: %s ends before offset %d", ErrShortIO, path, d.Offset+int64(len(buf)))
		}
		got += n
	}
	return buf, nil
}

// Create creates name and preallocates it to size bytes (fallocate, or
// ftruncate where the filesystem cannot), then syncs file and directory.
// An existing file of exactly that size is a success (a retry); an empty
// one is preallocated; any other size is ErrFileSize.
func (p *Posix) Create(name string, size int64) error {
	path, err := p.path(name)
	if err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("dfsio: create %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("dfsio: stat %s: %w", path, err)
	}
	switch {
	case st.Size == size:
		return nil
	case st.Size != 0:
		return fmt.Errorf("%w: %s has %d bytes, want %d", ErrFileSize, path, st.Size, size)
	}
	if err := unix.Fallocate(fd, 0, 0, size); err != nil {
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("dfsio: fallocate %s to %d: %w", path, size, err)
		}
		if err := unix.Ftruncate(fd, size); err != nil {
			return fmt.Errorf("dfsio: ftruncate %s to %d: %w", path, size, err)
		}
	}
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("dfsio: fsync %s: %w", path, err)
	}
	return syncDir(p.root)
}

// Remove unlinks name; a missing file is a success.
func (p *Posix) Remove(name string) error {
	path, err := p.path(name)
	if err != nil {
		return err
	}
	if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("dfsio: remove %s: %w", path, err)
	}
	return syncDir(p.root)
}

// Exists reports whether name exists. "No" is said only under a usable
// root (CheckRoot): a file absent from a missing, unmounted, foreign or
// unmarked root is an ErrRootUnusable error, never false.
func (p *Posix) Exists(name string) (bool, error) {
	path, err := p.path(name)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(path)
	switch {
	case err == nil:
		return true, p.CheckRoot()
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
		if rerr := p.CheckRoot(); rerr != nil {
			return false, rerr
		}
		if errors.Is(err, unix.ENOTDIR) {
			return false, err
		}
		return false, nil
	}
	return false, err
}

// List returns the allocator file names in the root, sorted.
func (p *Posix) List() ([]string, error) {
	ents, err := os.ReadDir(p.root)
	if err != nil {
		return nil, fmt.Errorf("dfsio: list %s: %w", p.root, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && IsAllocatorFile(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("dfsio: open dir %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("dfsio: fsync dir %s: %w", dir, err)
	}
	return nil
}
