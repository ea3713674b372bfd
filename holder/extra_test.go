package holder

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"sexton/api"
	"sexton/internal/fsys/errorfs"
)

// opRecorder notes, in order, the operations of interest a code path issues.
type opRecorder struct {
	mu  sync.Mutex
	ops []string
}

func (r *opRecorder) watch(f *errorfs.Faulty, op errorfs.Op, pattern string) {
	f.Inject(errorfs.Rule{Op: op, Pattern: pattern, Hook: func(p string) {
		r.mu.Lock()
		r.ops = append(r.ops, string(op)+" "+filepath.Ext(p))
		r.mu.Unlock()
	}})
}

func (r *opRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.ops
	r.ops = nil
	return out
}

func TestPersistenceStepsRunInProtocolOrder(t *testing.T) {
	s, ffs := openFaulty(t, 0)
	var rec opRecorder
	rec.watch(ffs, errorfs.OpWrite, "*")
	rec.watch(ffs, errorfs.OpSync, "*")
	rec.watch(ffs, errorfs.OpRename, "*.tmp")
	rec.watch(ffs, errorfs.OpSyncDir, "*")
	mustPut(t, s, "k", incN(1), []byte("v"))
	want := "[write .bucket sync .bucket write .tmp sync .tmp rename .tmp syncdir " + filepath.Ext(s.Dir()) + "]"
	if got := fmtOps(rec.take()); got != want {
		t.Fatalf("put steps %s, want %s", got, want)
	}
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1))}), api.AckRemoved)
	want = "[write .tmp sync .tmp rename .tmp syncdir " + filepath.Ext(s.Dir()) + "]"
	if got := fmtOps(rec.take()); got != want {
		t.Fatalf("tombstone steps %s, want %s", got, want)
	}
}

func fmtOps(ops []string) string {
	out := "["
	for i, o := range ops {
		if i > 0 {
			out += " "
		}
		out += o
	}
	return out + "]"
}

func TestTombstoneWinsOverLiveCopyElsewhere(t *testing.T) {
	// Two buckets list the same incarnation (as a GC crash could leave them):
	// one tombstoned, one live. The record must stay deleted.
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 1})
	mustPut(t, s, "dup", incN(1), []byte("same"))
	mustPut(t, s, "other", incN(2), []byte("same"))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "dup", incN(1))}), api.AckRemoved)
	s.Close()
	// Rewrite bucket 2's record as a live copy of dup@1.
	m := readMetaFile(t, dir, 2)
	m.Objects[0].Key, m.Objects[0].Incarnation = "dup", incN(1)
	raw, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, metaName(2)), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 1})
	defer s.Close()
	if _, err := s.Get("dup", incN(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("live copy elsewhere revived a tombstoned record: %v", err)
	}
	if s.OpenReport().ShadowedRecords != 1 || len(s.LiveRefs()) != 0 {
		t.Fatalf("report %+v refs %v", s.OpenReport(), s.LiveRefs())
	}
	if u := s.Usage(); u.DeadBytes != 8 || u.LiveBytes != 0 {
		t.Fatalf("usage %+v", u)
	}
}

func TestDuplicateTasksInOneBatchShareOnePersistence(t *testing.T) {
	s, ffs := openFaulty(t, 0)
	mustPut(t, s, "k", incN(1), []byte("v"))
	ffs.ResetCounts()
	rs := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1)), task(s, 2, "k", incN(1))})
	wantOutcomes(t, rs, api.AckRemoved, api.AckRemoved)
	if n := ffs.Count(errorfs.OpRename); n != 1 {
		t.Fatalf("%d renames", n)
	}
}

func TestBindClusterRecordsOnce(t *testing.T) {
	dir := t.TempDir()
	opts, ffs := faultyOpts(0)
	s := openT(t, dir, opts)
	ffs.Inject(errorfs.Rule{Op: errorfs.OpRename, Err: syscall.EIO, Once: true})
	if err := s.BindCluster(7); err == nil || s.Identity().ClusterID != 0 {
		t.Fatalf("failed bind changed identity: %v %+v", err, s.Identity())
	}
	if err := s.BindCluster(7); err != nil {
		t.Fatal(err)
	}
	if err := s.BindCluster(7); err != nil {
		t.Fatalf("rebind: %v", err)
	}
	if err := s.BindCluster(8); !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("other cluster: %v", err)
	}
	seg := s.SegmentID()
	s.Close()
	s = openT(t, dir, StoreOptions{ClusterID: 7})
	defer s.Close()
	if s.Identity().ClusterID != 7 || s.SegmentID() != seg {
		t.Fatalf("identity after reopen %+v", s.Identity())
	}
}

func TestCloseWaitsForTombstoneBatch(t *testing.T) {
	dir := t.TempDir()
	opts, ffs := faultyOpts(0)
	s := openT(t, dir, opts)
	mustPut(t, s, "k", incN(1), []byte("v"))
	entered, release := make(chan struct{}), make(chan struct{})
	ffs.Inject(errorfs.Rule{Op: errorfs.OpRename, Once: true, Hook: func(string) { close(entered); <-release }})
	results := make(chan []api.TaskResult, 1)
	go func() { results <- s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1))}) }()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for {
		s.mu.Lock()
		c := s.closed
		s.mu.Unlock()
		if c {
			break
		}
		runtime.Gosched()
	}
	// Close has begun but the batch is mid-persistence: the lock is held.
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrDirectoryInUse) {
		t.Fatalf("open during close: %v", err)
	}
	close(release)
	wantOutcomes(t, <-results, api.AckRemoved)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !tombstonedOnDisk(t, dir, 1, "k", incN(1)) {
		t.Fatal("tombstone not on disk")
	}
}
