package errorfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"sexton/internal/fsys"
)

// Op names one kind of filesystem operation, for fault rules and counters.
type Op string

const (
	OpOpen     Op = "open"
	OpRead     Op = "read"
	OpWrite    Op = "write" // Write and WriteAt
	OpSync     Op = "sync"  // fsync of a file
	OpTruncate Op = "truncate"
	OpRename   Op = "rename"
	OpRemove   Op = "remove"
	OpReadDir  Op = "readdir"
	OpStat     Op = "stat"
	OpMkdir    Op = "mkdir"
	OpSyncDir  Op = "syncdir" // fsync of a directory
	OpLock     Op = "lock"
	OpStatfs   Op = "statfs"
	OpFalloc   Op = "fallocate"
	OpPunch    Op = "punch" // PunchHole
)

// Rule makes operations fail or run a hook. A rule matches an operation of
// kind Op whose path's base name matches Pattern (filepath.Match syntax; ""
// matches every path). A rename matches on either its source or its target.
type Rule struct {
	Op      Op
	Pattern string
	// Err is returned instead of performing the operation; nil only runs
	// Hook (and the operation proceeds).
	Err error
	// Once removes the rule after it first matches.
	Once bool
	// Hook, if set, runs (outside any lock of the wrapper) before the
	// operation, for tests that need to pause a code path at an operation.
	Hook func(path string)
}

// Faulty wraps an FS with fault rules and per-operation counters. It is
// safe for concurrent use.
type Faulty struct {
	inner fsys.FS

	mu     sync.Mutex
	rules  []*Rule
	counts map[Op]map[string]int // op → base name → count

	// spaceMu serializes the operations that change the space model with
	// their accounting; space is nil until SetSpace.
	spaceMu sync.Mutex
	space   *spaceModel
}

// spaceModel is a filesystem of total bytes with free bytes left, counted
// in file sizes (no blocks, no metadata).
type spaceModel struct{ total, free int64 }

var _ fsys.FS = (*Faulty)(nil)

// NewFaulty wraps inner.
func NewFaulty(inner fsys.FS) *Faulty {
	return &Faulty{inner: inner, counts: make(map[Op]map[string]int)}
}

// Inject adds a rule. Rules are checked in the order they were added.
func (f *Faulty) Inject(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rc := r
	f.rules = append(f.rules, &rc)
}

// ClearRules removes every rule.
func (f *Faulty) ClearRules() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// ResetCounts zeroes every counter.
func (f *Faulty) ResetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts = make(map[Op]map[string]int)
}

// Count is how many operations of kind op were attempted (failed ones
// included) on any path.
func (f *Faulty) Count(op Op) int { return f.CountMatching(op, "") }

// CountMatching is how many operations of kind op were attempted on paths
// whose base name matches pattern ("" matches all).
func (f *Faulty) CountMatching(op Op, pattern string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for base, c := range f.counts[op] {
		if match(pattern, base) {
			n += c
		}
	}
	return n
}

func match(pattern, base string) bool {
	if pattern == "" {
		return true
	}
	ok, err := filepath.Match(pattern, base)
	return err == nil && ok
}

// check counts the operation and applies the first matching rule.
func (f *Faulty) check(op Op, paths ...string) error {
	f.mu.Lock()
	m := f.counts[op]
	if m == nil {
		m = make(map[string]int)
		f.counts[op] = m
	}
	m[filepath.Base(paths[0])]++
	var hit *Rule
	var hitPath string
	for i, r := range f.rules {
		if r.Op != op {
			continue
		}
		for _, p := range paths {
			if match(r.Pattern, filepath.Base(p)) {
				hit, hitPath = r, p
				break
			}
		}
		if hit != nil {
			if r.Once {
				f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
			}
			break
		}
	}
	f.mu.Unlock()
	if hit == nil {
		return nil
	}
	if hit.Hook != nil {
		hit.Hook(hitPath)
	}
	if hit.Err != nil {
		return &fs.PathError{Op: string(op), Path: hitPath, Err: hit.Err}
	}
	return nil
}

// SetSpace makes the wrapper model a small filesystem, so a test can run
// out of space unprivileged ("ENOSPC after N bytes"): of total bytes, free
// are left. Every write that grows a file and every Fallocate takes bytes
// from free; one that does not fit fails with ENOSPC (a write first writes
// the prefix that fits, as write(2) does). Remove, a truncation (Truncate
// or OpenFile with O_TRUNC) and a Rename over an existing file give the
// bytes they drop back. Statfs reports the model. Sizes are file sizes:
// no blocks, no inodes, no directory entries.
func (f *Faulty) SetSpace(total, free int64) {
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	f.space = &spaceModel{total: total, free: free}
}

// TakeSpace takes n bytes from the model's free space (another writer
// filling the disk); a negative n gives them back. Free never goes below
// zero.
func (f *Faulty) TakeSpace(n int64) {
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	if f.space != nil {
		f.space.free = max(0, f.space.free-n)
	}
}

// FreeSpace is the model's free bytes (-1 without SetSpace).
func (f *Faulty) FreeSpace() int64 {
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	if f.space == nil {
		return -1
	}
	return f.space.free
}

// sizeOf is the size of name on the inner filesystem, 0 if it is absent.
func (f *Faulty) sizeOf(name string) int64 {
	st, err := f.inner.Stat(name)
	if err != nil {
		return 0
	}
	return st.Size()
}

func noSpace(op Op, path string) error {
	return &fs.PathError{Op: string(op), Path: path, Err: syscall.ENOSPC}
}

// OpenFile implements FS.
func (f *Faulty) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	var dropped int64
	if f.space != nil && flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		dropped = f.sizeOf(name)
	}
	inner, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if f.space != nil {
		f.space.free += dropped
	}
	return &faultyFile{File: inner, fs: f, name: name}, nil
}

// Rename implements FS.
func (f *Faulty) Rename(oldpath, newpath string) error {
	if err := f.check(OpRename, oldpath, newpath); err != nil {
		return err
	}
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	var dropped int64
	if f.space != nil && filepath.Clean(oldpath) != filepath.Clean(newpath) {
		dropped = f.sizeOf(newpath)
	}
	if err := f.inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	if f.space != nil {
		f.space.free += dropped
	}
	return nil
}

// Remove implements FS.
func (f *Faulty) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	var dropped int64
	if f.space != nil {
		dropped = f.sizeOf(name)
	}
	if err := f.inner.Remove(name); err != nil {
		return err
	}
	if f.space != nil {
		f.space.free += dropped
	}
	return nil
}

// Statfs implements FS: the model when SetSpace was called, else the
// inner filesystem's.
func (f *Faulty) Statfs(path string) (fsys.Space, error) {
	if err := f.check(OpStatfs, path); err != nil {
		return fsys.Space{}, err
	}
	f.spaceMu.Lock()
	m := f.space
	var sp fsys.Space
	if m != nil {
		sp = fsys.Space{Total: m.total, Free: m.free}
	}
	f.spaceMu.Unlock()
	if m != nil {
		return sp, nil
	}
	return f.inner.Statfs(path)
}

// Fallocate implements FS; under SetSpace the growth is taken from the
// model first and nothing is allocated when it does not fit.
func (f *Faulty) Fallocate(file fsys.File, size int64) error {
	name := file.Name()
	if err := f.check(OpFalloc, name); err != nil {
		return err
	}
	if ff, ok := file.(*faultyFile); ok {
		file = ff.File
	}
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	if f.space != nil {
		st, err := file.Stat()
		if err != nil {
			return err
		}
		grow := max(0, size-st.Size())
		if grow > f.space.free {
			return noSpace(OpFalloc, name)
		}
		if err := f.inner.Fallocate(file, size); err != nil {
			return err
		}
		f.space.free -= grow
		return nil
	}
	return f.inner.Fallocate(file, size)
}

// PunchHole implements FS. The space model counts file sizes, which a
// punched hole does not change, so under SetSpace nothing is given back.
func (f *Faulty) PunchHole(file fsys.File, off, size int64) error {
	if err := f.check(OpPunch, file.Name()); err != nil {
		return err
	}
	if ff, ok := file.(*faultyFile); ok {
		file = ff.File
	}
	return f.inner.PunchHole(file, off, size)
}

// ReadDir implements FS.
func (f *Faulty) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.check(OpReadDir, name); err != nil {
		return nil, err
	}
	return f.inner.ReadDir(name)
}

// Stat implements FS.
func (f *Faulty) Stat(name string) (fs.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.inner.Stat(name)
}

// MkdirAll implements FS.
func (f *Faulty) MkdirAll(name string, perm fs.FileMode) error {
	if err := f.check(OpMkdir, name); err != nil {
		return err
	}
	return f.inner.MkdirAll(name, perm)
}

// SyncDir implements FS.
func (f *Faulty) SyncDir(name string) error {
	if err := f.check(OpSyncDir, name); err != nil {
		return err
	}
	return f.inner.SyncDir(name)
}

// Lock implements FS.
func (f *Faulty) Lock(name string) (io.Closer, error) {
	if err := f.check(OpLock, name); err != nil {
		return nil, err
	}
	return f.inner.Lock(name)
}

type faultyFile struct {
	fsys.File
	fs   *Faulty
	name string
}

func (ff *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := ff.fs.check(OpRead, ff.name); err != nil {
		return 0, err
	}
	return ff.File.ReadAt(p, off)
}

func (ff *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err := ff.fs.check(OpWrite, ff.name); err != nil {
		return 0, err
	}
	return ff.spaceWrite(p, off, func(b []byte) (int, error) { return ff.File.WriteAt(b, off) })
}

func (ff *faultyFile) Write(p []byte) (int, error) {
	if err := ff.fs.check(OpWrite, ff.name); err != nil {
		return 0, err
	}
	// Write appends at the file offset; every caller writes a fresh or
	// truncated file front to back, so the offset is the file's size.
	return ff.spaceWrite(p, -1, ff.File.Write)
}

// spaceWrite runs a write under the space model: the bytes that grow the
// file are taken from free; what does not fit is not written and the
// write fails with ENOSPC after the prefix that fit. off < 0 means at the
// end of the file.
func (ff *faultyFile) spaceWrite(p []byte, off int64, write func([]byte) (int, error)) (int, error) {
	f := ff.fs
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	if f.space == nil {
		return write(p)
	}
	st, err := ff.File.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if off < 0 {
		off = size
	}
	// Bytes up to the current size overwrite; the rest grow the file.
	fits := int64(len(p))
	if end := off + int64(len(p)); end > size {
		room := size - off + f.space.free // bytes of p that can be stored
		if room < fits {
			fits = max(0, room)
		}
	}
	n, err := write(p[:fits])
	if grown := off + int64(n) - size; grown > 0 {
		f.space.free -= grown
	}
	if err == nil && fits < int64(len(p)) {
		err = noSpace(OpWrite, ff.name)
	}
	return n, err
}

func (ff *faultyFile) Sync() error {
	if err := ff.fs.check(OpSync, ff.name); err != nil {
		return err
	}
	return ff.File.Sync()
}

func (ff *faultyFile) Truncate(size int64) error {
	if err := ff.fs.check(OpTruncate, ff.name); err != nil {
		return err
	}
	f := ff.fs
	f.spaceMu.Lock()
	defer f.spaceMu.Unlock()
	if f.space == nil {
		return ff.File.Truncate(size)
	}
	st, err := ff.File.Stat()
	if err != nil {
		return err
	}
	if grow := size - st.Size(); grow > f.space.free {
		return noSpace(OpTruncate, ff.name)
	}
	if err := ff.File.Truncate(size); err != nil {
		return err
	}
	f.space.free -= size - st.Size()
	return nil
}
