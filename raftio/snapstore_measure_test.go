package raftio

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"

	"sexton/internal/fsys"
)

// envSnapMeasure, set to a size in MiB, makes TestSnapshotStoreMeasure
// time hashicorp's FileSnapshotStore against SnapshotStore on a stream of
// that size in a temp dir ($TMPDIR: put it on the disk to measure).
const envSnapMeasure = "SEXTON_SNAPSTORE_MEASURE_MB"

// cpuNow is the process's user+system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dropCache evicts path's pages (clean after the store's fsync) from the
// page cache, so the next read comes from the disk.
func dropCache(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotStoreMeasure: Create+Write+Close, then Open+read cold (the
// state evicted from the page cache) and warm, of a stream of
// $SEXTON_SNAPSTORE_MEASURE_MB MiB, written and read in 64 KiB pieces as
// the snapshot writer's chunks and reader's buffer make them, with each
// store; wall and CPU time.
func TestSnapshotStoreMeasure(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv(envSnapMeasure))
	if mb <= 0 {
		t.Skip("set " + envSnapMeasure + " to a size in MiB")
	}
	piece := randBytes(1, 64<<10)
	size := int64(mb) << 20
	type store struct {
		name      string
		open      func(dir string) raft.SnapshotStore
		statePath func(dir, id string) string
	}
	stores := []store{
		{"hashicorp FileSnapshotStore", func(dir string) raft.SnapshotStore {
			s, err := raft.NewFileSnapshotStore(dir, 3, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, func(dir, id string) string { return filepath.Join(dir, "snapshots", id, "state.bin") }},
		{"SnapshotStore", func(dir string) raft.SnapshotStore {
			return openTestSnapStore(t, fsys.OS{}, dir, 3)
		}, func(dir, id string) string { return filepath.Join(dir, "snapshots", id+".state") }},
	}
	_, trans := raft.NewInmemTransport("")
	for round := range 3 {
		for _, st := range stores {
			dir := t.TempDir()
			s := st.open(dir)
			wall, cpu := time.Now(), cpuNow()
			sink, err := s.Create(1, 100, 2, snapTestConf, 1, trans)
			if err != nil {
				t.Fatal(err)
			}
			for n := int64(0); n < size; n += int64(len(piece)) {
				if _, err := sink.Write(piece); err != nil {
					t.Fatal(err)
				}
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			writeWall, writeCPU := time.Since(wall), cpuNow()-cpu
			read := func() (time.Duration, time.Duration) {
				wall, cpu := time.Now(), cpuNow()
				_, rc, err := s.Open(sink.ID())
				if err != nil {
					t.Fatal(err)
				}
				// 64 KiB reads, as the snapshot reader's buffer makes them.
				n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{rc}, make([]byte, 64<<10))
				rc.Close()
				if err != nil || n != size {
					t.Fatalf("read %d of %d bytes: %v", n, size, err)
				}
				return time.Since(wall), cpuNow() - cpu
			}
			dropCache(t, st.statePath(dir, sink.ID()))
			coldWall, coldCPU := read()
			warmWall, warmCPU := read()
			t.Logf("round %d, %s, %d MiB: create+write+close %v (cpu %v); open+read cold %v (cpu %v), warm %v (cpu %v)",
				round, st.name, mb, writeWall.Round(time.Millisecond), writeCPU.Round(time.Millisecond),
				coldWall.Round(time.Millisecond), coldCPU.Round(time.Millisecond),
				warmWall.Round(time.Millisecond), warmCPU.Round(time.Millisecond))
			os.RemoveAll(dir)
		}
	}
}
