package errorfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"sexton/internal/fsys"
	"sexton/internal/testutil"
)

func TestFaultRuleFailsOnceThenPasses(t *testing.T) {
	dir := t.TempDir()
	f := NewFaulty(fsys.OS{})
	f.Inject(Rule{Op: OpSync, Pattern: "*.meta.tmp", Err: syscall.EIO, Once: true})
	name := filepath.Join(dir, "1.meta.tmp")
	if err := writeFileSync(f, name, []byte("x"), 0o644); !errors.Is(err, syscall.EIO) {
		t.Fatalf("first sync: got %v, want EIO", err)
	}
	if err := writeFileSync(f, name, []byte("y"), 0o644); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	other := filepath.Join(dir, "1.bucket")
	if err := writeFileSync(f, other, []byte("z"), 0o644); err != nil {
		t.Fatalf("unmatched path: %v", err)
	}
	if got := f.CountMatching(OpSync, "*.meta.tmp"); got != 2 {
		t.Fatalf("sync count on tmp = %d, want 2", got)
	}
	if got := f.Count(OpSync); got != 3 {
		t.Fatalf("sync count = %d, want 3", got)
	}
	b, err := os.ReadFile(name)
	if err != nil || string(b) != "y" {
		t.Fatalf("content %q %v", b, err)
	}
}

func TestFaultRuleAlwaysOnRenameTarget(t *testing.T) {
	dir := t.TempDir()
	f := NewFaulty(fsys.OS{})
	f.Inject(Rule{Op: OpRename, Pattern: "*.meta", Err: syscall.ENOSPC})
	src := filepath.Join(dir, "a.tmp")
	if err := os.WriteFile(src, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := f.Rename(src, filepath.Join(dir, "a.meta")); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("rename %d: %v", i, err)
		}
	}
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("source must be untouched: %v", err)
	}
	f.ClearRules()
	if err := f.Rename(src, filepath.Join(dir, "a.meta")); err != nil {
		t.Fatal(err)
	}
}

// The power-loss model keeps exactly what was fsynced: file data as of its
// last fsync, directory entries as of the last directory fsync.
func TestPowerLossKeepsOnlyWhatWasSynced(t *testing.T) {
	dir := t.TempDir()
	write := func(filesys fsys.FS, name, data string, sync bool) {
		t.Helper()
		f, err := filesys.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), []byte("old bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPowerLoss(fsys.OS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	write(p, "synced", "durable", true)
	write(p, "unsynced-data", "lost", false)
	if err := p.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	write(p, "synced", "durable, then more", false) // data after the fsync: lost
	write(p, "no-dir-sync", "entry lost", true)     // data synced, entry not
	write(p, "tmp", "new content", true)
	if err := p.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "old")); err != nil { // rename not synced
		t.Fatal(err)
	}
	p.Cut()
	if err := p.Remove(filepath.Join(dir, "synced")); !errors.Is(err, ErrPowerCut) {
		t.Fatalf("remove after the cut: %v", err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	got := testutil.DirContents(t, dir)
	want := map[string]string{"old": "old bytes", "synced": "durable", "unsynced-data": ""}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the power cut: %v, want %v", got, want)
	}
}

// The space model fails a write with ENOSPC once its bytes run out (after
// writing the prefix that fit), gives bytes back on remove, truncation and
// rename-over, and reports itself through Statfs; Fallocate takes its
// growth or nothing.
func TestFaultySpaceModelENOSPCAfterNBytes(t *testing.T) {
	dir := t.TempDir()
	f := NewFaulty(fsys.OS{})
	f.SetSpace(1000, 100)
	a, err := f.OpenFile(filepath.Join(dir, "a"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n, err := a.WriteAt(make([]byte, 60), 0); n != 60 || err != nil {
		t.Fatalf("first write: %d %v", n, err)
	}
	if n, err := a.WriteAt(make([]byte, 10), 0); n != 10 || err != nil || f.FreeSpace() != 40 {
		t.Fatalf("overwrite took space: %d %v free %d", n, err, f.FreeSpace())
	}
	n, err := a.WriteAt(make([]byte, 50), 60)
	if n != 40 || !errors.Is(err, syscall.ENOSPC) || f.FreeSpace() != 0 {
		t.Fatalf("write past the space: n=%d err=%v free=%d, want 40, ENOSPC, 0", n, err, f.FreeSpace())
	}
	if sp, err := f.Statfs(dir); err != nil || sp.Free != 0 || sp.Total != 1000 {
		t.Fatalf("statfs %+v %v", sp, err)
	}
	if err := writeFileSync(f, filepath.Join(dir, "b"), []byte("x"), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full model: %v", err)
	}
	if err := a.Truncate(30); err != nil || f.FreeSpace() != 70 {
		t.Fatalf("truncate gave back %d (%v), want free 70", f.FreeSpace(), err)
	}
	r, err := f.OpenFile(filepath.Join(dir, "r"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fallocate(r, 80); !errors.Is(err, syscall.ENOSPC) || f.FreeSpace() != 70 {
		t.Fatalf("fallocate beyond the space: %v free %d", err, f.FreeSpace())
	}
	if err := f.Fallocate(r, 50); err != nil || f.FreeSpace() != 20 {
		t.Fatalf("fallocate: %v free %d", err, f.FreeSpace())
	}
	if st, _ := r.Stat(); st.Size() != 50 {
		t.Fatalf("fallocated size %d", st.Size())
	}
	r.Close()
	if err := f.Remove(filepath.Join(dir, "r")); err != nil || f.FreeSpace() != 70 {
		t.Fatalf("remove gave back %d (%v)", f.FreeSpace(), err)
	}
	if err := writeFileSync(f, filepath.Join(dir, "b"), make([]byte, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "a")); err != nil || f.FreeSpace() != 80 {
		t.Fatalf("rename over a 30-byte file: free %d (%v), want 80", f.FreeSpace(), err)
	}
	f.TakeSpace(1000)
	if f.FreeSpace() != 0 {
		t.Fatalf("TakeSpace: free %d", f.FreeSpace())
	}
}

// The power-loss model is strict in every way pebble's StrictMem is, one
// case per rule: each case starts from a directory holding "a" = "A"
// (durable), runs operations, cuts, and checks the directory's exact
// content after Restore.
func TestPowerLossIsStrict(t *testing.T) {
	type ops struct {
		dir string
		p   *PowerLoss
		t   *testing.T
	}
	path := func(o ops, n string) string { return filepath.Join(o.dir, n) }
	create := func(o ops, name, data string, sync bool) fsys.File {
		o.t.Helper()
		f, err := o.p.OpenFile(path(o, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			o.t.Fatal(err)
		}
		if _, err := f.Write([]byte(data)); err != nil {
			o.t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				o.t.Fatal(err)
			}
		}
		return f
	}
	syncDir := func(o ops) {
		o.t.Helper()
		if err := o.p.SyncDir(o.dir); err != nil {
			o.t.Fatal(err)
		}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		run  func(o ops)
		want map[string]string
	}{
		{"created and fsynced, directory not fsynced: gone", func(o ops) {
			create(o, "b", "B", true).Close()
		}, map[string]string{"a": "A"}},
		{"created, directory fsynced, data not fsynced: empty", func(o ops) {
			create(o, "b", "B", false).Close()
			syncDir(o)
		}, map[string]string{"a": "A", "b": ""}},
		{"created, fsynced, directory fsynced: kept", func(o ops) {
			create(o, "b", "B", true).Close()
			syncDir(o)
		}, map[string]string{"a": "A", "b": "B"}},
		{"rename not followed by a directory fsync: undone", func(o ops) {
			create(o, "tmp", "new", true).Close()
			must(o.t, o.p.Rename(path(o, "tmp"), path(o, "a")))
		}, map[string]string{"a": "A"}},
		{"rename of a durable file, directory not fsynced: old name back", func(o ops) {
			must(o.t, o.p.Rename(path(o, "a"), path(o, "c")))
		}, map[string]string{"a": "A"}},
		{"rename then directory fsync: durable", func(o ops) {
			create(o, "tmp", "new", true).Close()
			must(o.t, o.p.Rename(path(o, "tmp"), path(o, "a")))
			syncDir(o)
		}, map[string]string{"a": "new"}},
		{"rename and directory fsync of an unsynced file: entry kept, data empty", func(o ops) {
			create(o, "tmp", "new", false).Close()
			must(o.t, o.p.Rename(path(o, "tmp"), path(o, "a")))
			syncDir(o)
		}, map[string]string{"a": ""}},
		{"unlink not followed by a directory fsync: undone", func(o ops) {
			must(o.t, o.p.Remove(path(o, "a")))
		}, map[string]string{"a": "A"}},
		{"unlink then directory fsync: gone", func(o ops) {
			must(o.t, o.p.Remove(path(o, "a")))
			syncDir(o)
		}, map[string]string{}},
		{"write to a durable file not fsynced: dropped", func(o ops) {
			f, err := o.p.OpenFile(path(o, "a"), os.O_RDWR, 0)
			must(o.t, err)
			_, err = f.WriteAt([]byte("more"), 1)
			must(o.t, err)
			f.Close()
		}, map[string]string{"a": "A"}},
		{"truncate and O_TRUNC not fsynced: dropped", func(o ops) {
			f, err := o.p.OpenFile(path(o, "a"), os.O_RDWR, 0)
			must(o.t, err)
			must(o.t, f.Truncate(0))
			f.Close()
			create(o, "a", "", false).Close()
		}, map[string]string{"a": "A"}},
		{"file fsynced after the directory fsync: the entry's data is the inode's", func(o ops) {
			f := create(o, "b", "one", true)
			syncDir(o)
			_, err := f.WriteAt([]byte("two"), 0)
			must(o.t, err)
			must(o.t, f.Sync())
			f.Close()
		}, map[string]string{"a": "A", "b": "two"}},
		{"fsync of a renamed file through its old descriptor", func(o ops) {
			f := create(o, "tmp", "x", false)
			must(o.t, o.p.Rename(path(o, "tmp"), path(o, "b")))
			syncDir(o)
			must(o.t, f.Sync())
			f.Close()
		}, map[string]string{"a": "A", "b": "x"}},
		{"fallocate not fsynced: dropped", func(o ops) {
			f, err := o.p.OpenFile(path(o, "a"), os.O_RDWR, 0)
			must(o.t, err)
			if err := o.p.Fallocate(f, 4096); err != nil {
				o.t.Skipf("fallocate: %v", err)
			}
			f.Close()
		}, map[string]string{"a": "A"}},
		{"lock file, directory not fsynced: gone", func(o ops) {
			c, err := o.p.Lock(path(o, ".lock"))
			must(o.t, err)
			c.Close()
		}, map[string]string{"a": "A"}},
		{"a file made behind the model's back: gone", func(o ops) {
			must(o.t, os.WriteFile(path(o, "b"), []byte("B"), 0o644))
		}, map[string]string{"a": "A"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644))
			p, err := NewPowerLoss(fsys.OS{}, dir)
			must(t, err)
			c.run(ops{dir: dir, p: p, t: t})
			p.Cut()
			if _, err := p.OpenFile(filepath.Join(dir, "z"), os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, ErrPowerCut) {
				t.Fatalf("create after the cut: %v", err)
			}
			if err := p.SyncDir(dir); !errors.Is(err, ErrPowerCut) {
				t.Fatalf("directory fsync after the cut: %v", err)
			}
			must(t, p.Restore())
			if got := testutil.DirContents(t, dir); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("after the power cut: %q, want %q", got, c.want)
			}
		})
	}
}

// Between directory fsyncs nothing is ordered: Pending lists the
// operations since the last one and RestoreTo builds the image in which
// any chosen subset of them persisted.
func TestPowerLossRestoreToAnySubsetOfPending(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPowerLoss(fsys.OS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, data string) {
		f, err := p.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(data))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	put("old", "O")
	if err := p.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	put("tmp", "new")
	if err := p.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	want := []string{"create tmp", "rename tmp → a", "remove old"}
	if got := p.Pending(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pending %q, want %q", got, want)
	}
	for _, c := range []struct {
		keep []int
		want map[string]string
	}{
		{nil, map[string]string{"a": "A", "old": "O"}},
		{[]int{0}, map[string]string{"a": "A", "old": "O", "tmp": "new"}},
		{[]int{1}, map[string]string{"a": "new", "old": "O"}},
		{[]int{2}, map[string]string{"a": "A"}},
		{[]int{0, 1, 2}, map[string]string{"a": "new"}},
	} {
		dst := t.TempDir()
		if err := p.RestoreTo(dst, func(i int) bool { return slices.Contains(c.keep, i) }); err != nil {
			t.Fatal(err)
		}
		if got := testutil.DirContents(t, dst); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("keeping %v: %q, want %q", c.keep, got, c.want)
		}
	}
}

// writeFileSync creates (or truncates) name through fsys, writes data,
// fsyncs and closes it.
func writeFileSync(filesys fsys.FS, name string, data []byte, perm os.FileMode) error {
	f, err := filesys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
