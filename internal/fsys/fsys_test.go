package fsys

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, ".lock")
	l, err := OS{}.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (OS{}).Lock(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := OS{}.Lock(name)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

func TestReadFileBoundsSize(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "big")
	if err := os.WriteFile(name, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(OS{}, name, 99); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("got %v", err)
	}
	b, err := ReadFile(OS{}, name, 100)
	if err != nil || len(b) != 100 {
		t.Fatalf("got %d %v", len(b), err)
	}
}

// OS.Statfs and OS.Fallocate reach the real filesystem.
func TestOSStatfsAndFallocate(t *testing.T) {
	dir := t.TempDir()
	sp, err := OS{}.Statfs(dir)
	if err != nil || sp.Total <= 0 || sp.Free < 0 || sp.Free > sp.Total {
		t.Fatalf("statfs %+v %v", sp, err)
	}
	f, err := OS{}.OpenFile(filepath.Join(dir, "r"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := (OS{}).Fallocate(f, 64<<10); err != nil {
		t.Skipf("fallocate not supported here: %v", err)
	}
	if st, _ := f.Stat(); st.Size() != 64<<10 {
		t.Fatalf("size after fallocate %d", st.Size())
	}
}
