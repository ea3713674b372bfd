package fsys

import (
	"io"
	"io/fs"
	"path/filepath"
	"sync"
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
	inner FS

	mu     sync.Mutex
	rules  []*Rule
	counts map[Op]map[string]int // op → base name → count
}

var _ FS = (*Faulty)(nil)

// NewFaulty wraps inner.
func NewFaulty(inner FS) *Faulty {
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

// OpenFile implements FS.
func (f *Faulty) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	inner, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: inner, fs: f, name: name}, nil
}

// Rename implements FS.
func (f *Faulty) Rename(oldpath, newpath string) error {
	if err := f.check(OpRename, oldpath, newpath); err != nil {
		return err
	}
	return f.inner.Rename(oldpath, newpath)
}

// Remove implements FS.
func (f *Faulty) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
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
	File
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
	return ff.File.WriteAt(p, off)
}

func (ff *faultyFile) Write(p []byte) (int, error) {
	if err := ff.fs.check(OpWrite, ff.name); err != nil {
		return 0, err
	}
	return ff.File.Write(p)
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
	return ff.File.Truncate(size)
}
