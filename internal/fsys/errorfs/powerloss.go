package errorfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"sexton/internal/fsys"
)

// PowerLoss wraps the real filesystem for the files of one directory and
// models what a power cut keeps: a file's data as of its last fsync, and
// the directory's entries (creates, renames, removes) as of its last
// directory fsync — the strictest reading of POSIX, nothing more. Cut
// freezes that durable image (every later mutating operation fails with
// EIO, as if the machine were gone); Restore, after the store is closed,
// rewrites the directory to exactly that image, so reopening it shows
// what a machine would find after the power came back.
//
// This is the shape of pebble's vfs.NewStrictMem: at a cut each file
// reverts to its content at its last fsync (a file never fsynced is
// empty), and the directory's entries revert to their state at its last
// directory fsync: a file created (even fsynced) but whose directory was
// not fsynced disappears, a rename not followed by a directory fsync is
// undone (the old name comes back with its own durable content), an unlink
// not followed by one is undone. Regular files directly in the directory
// are modelled, the lock file included; subdirectories and anything
// elsewhere pass through. Everything in the directory must be changed
// through the model: Restore removes every regular file the durable image
// does not hold.
//
// POSIX orders nothing between directory fsyncs: a filesystem may have
// persisted any of the operations since the last one, in any combination
// (a journal commit, writeback). Pending lists those operations at the
// cut and RestoreTo builds the image in which a chosen subset of them
// persisted anyway, so a test can show which directory fsyncs are ordering
// barriers and not only the commit of the last step.
type PowerLoss struct {
	inner fsys.FS
	dir   string

	mu      sync.Mutex
	cut     bool
	current map[string]*plNode // base name → file, as the running process sees it
	durable map[string]*plNode // base name → file, as of the last directory fsync
	pending []plOp             // directory operations since the last directory fsync
}

// plOp is a directory operation not yet made durable: a create of name,
// a rename of name to to, or a remove of name; node is the file.
type plOp struct {
	kind     string
	name, to string
	node     *plNode
}

func (o plOp) String() string {
	if o.kind == "rename" {
		return "rename " + o.name + " → " + o.to
	}
	return o.kind + " " + o.name
}

// plNode is one file (an inode): data is what its last fsync made durable.
type plNode struct{ data []byte }

var _ fsys.FS = (*PowerLoss)(nil)

// ErrPowerCut is what every mutating operation returns after Cut.
var ErrPowerCut = fmt.Errorf("errorfs: power cut: %w", syscall.EIO)

// NewPowerLoss wraps inner for the files of dir; what dir holds now is
// taken as durable.
func NewPowerLoss(inner fsys.FS, dir string) (*PowerLoss, error) {
	p := &PowerLoss{inner: inner, dir: filepath.Clean(dir), current: map[string]*plNode{}, durable: map[string]*plNode{}}
	ents, err := os.ReadDir(p.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		n := &plNode{data: b}
		p.current[e.Name()], p.durable[e.Name()] = n, n
	}
	return p, nil
}

// Cut is the power cut: the durable image is frozen and every later
// create, write, fsync, truncate, rename and remove fails with EIO.
func (p *PowerLoss) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Restore rewrites the directory to the durable image frozen by Cut and
// starts a fresh, uncut model of it. Call it after the store is closed.
func (p *PowerLoss) Restore() error { return p.RestoreKeeping(func(int) bool { return false }) }

// RestoreKeeping is Restore in which the pending operations keep selects
// (by index into Pending) persisted anyway; see RestoreTo.
func (p *PowerLoss) RestoreKeeping(keep func(i int) bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return errors.New("errorfs: Restore without Cut")
	}
	img := p.imageLocked(keep)
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(p.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	next := map[string]*plNode{}
	for name, n := range img {
		if err := os.WriteFile(filepath.Join(p.dir, name), n.data, 0o644); err != nil {
			return err
		}
		next[name] = &plNode{data: n.data}
	}
	if err := syncPath(p.dir); err != nil {
		return err
	}
	p.current = next
	p.durable = map[string]*plNode{}
	for name, n := range next {
		p.durable[name] = n
	}
	p.pending = nil
	p.cut = false
	return nil
}

// Pending describes, in order, the directory operations since the last
// directory fsync: what a power cut now may or may not have persisted.
func (p *PowerLoss) Pending() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.pending))
	for i, o := range p.pending {
		out[i] = o.String()
	}
	return out
}

// RestoreTo writes, into the empty directory dst, the image a machine
// would find after the cut if the pending operations keep selects (by
// index into Pending) had persisted anyway and no other: the durable
// entries with those operations applied in order, each file with its
// fsynced content. A remove, and a rename's old name, take away only the
// entry of the file the operation moved. The model itself is left cut;
// call it as often as needed, then Restore.
func (p *PowerLoss) RestoreTo(dst string, keep func(i int) bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return errors.New("errorfs: RestoreTo without Cut")
	}
	img := p.imageLocked(keep)
	for name, n := range img {
		if err := os.WriteFile(filepath.Join(dst, name), n.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Files lists the durable image's names (for test diagnostics).
func (p *PowerLoss) Files() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for n := range p.durable {
		out = append(out, n)
	}
	return out
}

func syncPath(dir string) error { return fsys.OS{}.SyncDir(dir) }

// name returns the base name when path is a file directly in the modelled
// directory.
func (p *PowerLoss) name(path string) (string, bool) {
	path = filepath.Clean(path)
	if filepath.Dir(path) != p.dir {
		return "", false
	}
	return filepath.Base(path), true
}

func (p *PowerLoss) mutating() error {
	if p.cut {
		return ErrPowerCut
	}
	return nil
}

// OpenFile implements FS.
func (p *PowerLoss) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	base, tracked := p.name(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		if err := p.mutating(); err != nil {
			return nil, err
		}
	}
	f, err := p.inner.OpenFile(name, flag, perm)
	if err != nil || !tracked {
		return f, err
	}
	n := p.current[base]
	if n == nil {
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return f, err // a directory: not modelled
		}
		// Created now (or, against the rule above, behind the model's
		// back): no durable data, no durable entry yet.
		n = &plNode{}
		p.current[base] = n
		p.pending = append(p.pending, plOp{kind: "create", name: base, node: n})
	}
	return &plFile{File: f, p: p, node: n}, nil
}

// Rename implements FS.
func (p *PowerLoss) Rename(oldpath, newpath string) error {
	ob, ot := p.name(oldpath)
	nb, nt := p.name(newpath)
	return p.mutate(func() error { return p.inner.Rename(oldpath, newpath) }, func() error {
		if ot && nt {
			n := p.current[ob]
			if n == nil {
				n = &plNode{} // not made through the model: nothing durable
			}
			p.current[nb] = n
			delete(p.current, ob)
			p.pending = append(p.pending, plOp{kind: "rename", name: ob, to: nb, node: n})
		}
		return nil
	})
}

// mutate runs op, the inner file system's side of a mutation, under p.mu
// once the model allows mutations, then (still under p.mu) record, the
// model's side.
func (p *PowerLoss) mutate(op, record func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.mutating(); err != nil {
		return err
	}
	if err := op(); err != nil {
		return err
	}
	return record()
}

// Remove implements FS.
func (p *PowerLoss) Remove(name string) error {
	base, tracked := p.name(name)
	return p.mutate(func() error { return p.inner.Remove(name) }, func() error {
		if n := p.current[base]; tracked && n != nil {
			delete(p.current, base)
			p.pending = append(p.pending, plOp{kind: "remove", name: base, node: n})
		}
		return nil
	})
}

// ReadDir implements FS.
func (p *PowerLoss) ReadDir(name string) ([]fs.DirEntry, error) { return p.inner.ReadDir(name) }

// Stat implements FS.
func (p *PowerLoss) Stat(name string) (fs.FileInfo, error) { return p.inner.Stat(name) }

// MkdirAll implements FS. Directories are taken as durable.
func (p *PowerLoss) MkdirAll(name string, perm fs.FileMode) error {
	return p.inner.MkdirAll(name, perm)
}

// SyncDir implements FS: the modelled directory's entries become durable.
func (p *PowerLoss) SyncDir(name string) error {
	return p.mutate(func() error { return p.inner.SyncDir(name) }, func() error {
		if filepath.Clean(name) == p.dir {
			p.durable = make(map[string]*plNode, len(p.current))
			for n, node := range p.current {
				p.durable[n] = node
			}
			p.pending = nil
		}
		return nil
	})
}

// Statfs implements FS: the space is the real filesystem's.
func (p *PowerLoss) Statfs(path string) (fsys.Space, error) { return p.inner.Statfs(path) }

// Fallocate implements FS. It is a mutation like a write: the allocated
// (zero) bytes become durable with the file's next fsync.
func (p *PowerLoss) Fallocate(f fsys.File, size int64) error {
	inner, err := p.mutateFile(f)
	if err != nil {
		return err
	}
	return p.inner.Fallocate(inner, size)
}

// mutateFile checks that a mutation of f may happen now (mutating) and
// returns the inner file system's file under f.
func (p *PowerLoss) mutateFile(f fsys.File) (fsys.File, error) {
	p.mu.Lock()
	err := p.mutating()
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if pf, ok := f.(*plFile); ok {
		return pf.File, nil
	}
	return f, nil
}

// PunchHole implements FS. It is a mutation like a write; the holder
// punches only bytes nothing reads again, so whether a cut keeps or
// undoes the hole does not matter to it.
func (p *PowerLoss) PunchHole(f fsys.File, off, size int64) error {
	inner, err := p.mutateFile(f)
	if err != nil {
		return err
	}
	return p.inner.PunchHole(inner, off, size)
}

// Lock implements FS. A lock file it creates is a new entry like any
// other: it survives a cut only after a directory fsync.
func (p *PowerLoss) Lock(name string) (io.Closer, error) {
	base, tracked := p.name(name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if tracked && p.current[base] == nil {
		if err := p.mutating(); err != nil {
			return nil, err
		}
	}
	c, err := p.inner.Lock(name)
	if err == nil && tracked && p.current[base] == nil {
		n := &plNode{}
		p.current[base] = n
		p.pending = append(p.pending, plOp{kind: "create", name: base, node: n})
	}
	return c, err
}

// plFile is an open modelled file: Sync makes its current bytes durable.
type plFile struct {
	fsys.File
	p    *PowerLoss
	node *plNode
}

func (f *plFile) check() error {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	return f.p.mutating()
}

func (f *plFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f *plFile) Write(b []byte) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}

func (f *plFile) Truncate(size int64) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// Sync fsyncs and records the file's whole content as durable.
func (f *plFile) Sync() error {
	return f.p.mutate(func() error { return f.File.Sync() }, func() error {
		// Read through the descriptor, not the name: the file may have been
		// renamed since it was opened, and it may be open write-only.
		path := f.File.Name()
		if fd, ok := f.File.(interface{ Fd() uintptr }); ok {
			path = fmt.Sprintf("/proc/self/fd/%d", fd.Fd())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f.node.data = b
		return nil
	})
}

// imageLocked is the durable entries with the kept pending operations
// applied in order. A remove, and a rename's old name, take away only the
// entry of the file the operation moved: if that file's own create was
// not kept, whatever the name held before stays.
func (p *PowerLoss) imageLocked(keep func(i int) bool) map[string]*plNode {
	img := make(map[string]*plNode, len(p.durable))
	for n, node := range p.durable {
		img[n] = node
	}
	for i, o := range p.pending {
		if !keep(i) {
			continue
		}
		switch o.kind {
		case "create":
			img[o.name] = o.node
		case "rename":
			if img[o.name] == o.node {
				delete(img, o.name)
			}
			img[o.to] = o.node
		case "remove":
			if img[o.name] == o.node {
				delete(img, o.name)
			}
		}
	}
	return img
}
