//go:build testhooks

package holder

import (
	"errors"
	"os"
	"path/filepath"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
	"slices"
	"strings"
	"testing"
)

func TestGarbageCollectionIntentRecoversPreparedAndCommittedStates(t *testing.T) {
	f := mergeFixture(t, StoreOptions{})
	var prepared, committed string
	target := f.s.nextID
	f.s.hook = func(step string) {
		switch step {
		case hookGCBeforeCommit:
			prepared = copyDir(t, f.dir)
		case hookGCAfterCommit:
			committed = copyDir(t, f.dir)
		}
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	f.s.hook = nil

	if in := readIntentFile(t, prepared); in == nil || in.State != gcPrepared || in.Target != target || !slices.Equal(in.Sources, []uint64{1, 2}) {
		t.Fatalf("intent before commit: %s", describe(in))
	}
	if in := readIntentFile(t, committed); in == nil || in.State != gcCommitted || in.Target != target {
		t.Fatalf("intent after commit: %s", describe(in))
	}

	for dir, state := range map[string]string{prepared: "PREPARED", committed: "COMMITTED"} {
		if rep, err := Inspect(dir); err != nil || len(rep.Problems) > 0 || !strings.HasPrefix(rep.GCIntent, state) {
			t.Fatalf("inspect of a %s round: %v %q %v", state, err, rep.GCIntent, rep.Problems)
		}
	}

	// PREPARED: the sources stay authoritative, the target goes.
	s := openT(t, prepared, StoreOptions{BucketKeysLimit: 4})
	if !strings.Contains(s.OpenReport().GCRecovery, "PREPARED") || s.OpenReport().GCRecoveredState != "PREPARED" || slices.Contains(ids(s), target) {
		t.Fatalf("report %+v, buckets %v", s.OpenReport(), ids(s))
	}
	for _, n := range []string{bucketName(target), metaName(target), GCIntentFileName} {
		if _, err := os.Stat(filepath.Join(prepared, n)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived PREPARED recovery", n)
		}
	}
	if got := bucketOf(t, s, "victim", f.incs["victim"]); got != 1 {
		t.Fatalf("victim in bucket %d after PREPARED recovery, want source 1", got)
	}
	checkStore(t, s, f)
	if s.nextID <= target {
		t.Fatalf("next id %d reuses the dropped target %d", s.nextID, target)
	}
	s.Close()

	// COMMITTED: the target is kept, the sources go.
	s = openT(t, committed, StoreOptions{BucketKeysLimit: 4})
	if !strings.Contains(s.OpenReport().GCRecovery, "COMMITTED") || s.OpenReport().GCRecoveredState != "COMMITTED" || slices.Contains(ids(s), 1) || slices.Contains(ids(s), 2) {
		t.Fatalf("report %+v, buckets %v", s.OpenReport(), ids(s))
	}
	for _, n := range append(names(1, 2), GCIntentFileName) {
		if _, err := os.Stat(filepath.Join(committed, n)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived COMMITTED recovery", n)
		}
	}
	if got := bucketOf(t, s, "victim", f.incs["victim"]); got != target {
		t.Fatalf("victim in bucket %d after COMMITTED recovery, want target %d", got, target)
	}
	checkStore(t, s, f)
	s.Close()
}

func TestCommittedTargetMissingFailsClosed(t *testing.T) {
	f := mergeFixture(t, StoreOptions{})
	target := f.s.nextID
	var committed string
	f.s.hook = func(step string) {
		if step == hookGCAfterCommit {
			committed = copyDir(t, f.dir)
		}
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	f.s.hook = nil

	cases := map[string]func(dir string){
		"data missing": func(dir string) { os.Remove(filepath.Join(dir, bucketName(target))) },
		"meta missing": func(dir string) { os.Remove(filepath.Join(dir, metaName(target))) },
		"record corrupt": func(dir string) {
			p := filepath.Join(dir, bucketName(target))
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0xff
			os.WriteFile(p, b, 0o644)
		},
		"meta corrupt": func(dir string) {
			p := filepath.Join(dir, metaName(target))
			b, _ := os.ReadFile(p)
			b[3] ^= 0xff
			os.WriteFile(p, b, 0o644)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, committed)
			damage(dir)
			before := testutil.DirContents(t, dir)
			_, err := OpenStore(dir, StoreOptions{BucketKeysLimit: 4})
			if !errors.Is(err, ErrGCTargetInvalid) || !strings.Contains(err.Error(), bucketName(target)) {
				t.Fatalf("open: %v, want ErrGCTargetInvalid naming %s", err, bucketName(target))
			}
			delete(before, LockFileName)
			after := testutil.DirContents(t, dir)
			delete(after, LockFileName)
			sameSnapshot(t, before, after)
			rep, err := Inspect(dir)
			if err != nil || len(rep.Problems) == 0 {
				t.Fatalf("inspect: %v, problems %v", err, rep.Problems)
			}
		})
	}
}

func TestCorruptGCIntentFailsClosed(t *testing.T) {
	f := mergeFixture(t, StoreOptions{})
	var committed string
	f.s.hook = func(step string) {
		if step == hookGCAfterCommit {
			committed = copyDir(t, f.dir)
		}
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	p := filepath.Join(committed, GCIntentFileName)
	b, _ := os.ReadFile(p)
	b[2] ^= 1
	os.WriteFile(p, b, 0o644)
	if _, err := OpenStore(committed, StoreOptions{BucketKeysLimit: 4}); !errors.Is(err, ErrGCIntentPending) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with a corrupt intent: %v", err)
	}
}

func TestReadersOfSourceDrainBeforeUnlink(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		name := map[bool]string{false: "waits", true: "times out then retries"}[timeout]
		t.Run(name, func(t *testing.T) {
			ffs := errorfs.NewFaulty(fsys.OS{})
			f := mergeFixture(t, StoreOptions{FS: ffs})
			entered, release := make(chan struct{}), make(chan struct{})
			ffs.Inject(errorfs.Rule{Op: errorfs.OpRead, Pattern: bucketName(1), Once: true, Hook: func(string) {
				close(entered)
				<-release
			}})
			got := make(chan error, 1)
			go func() {
				v, err := f.s.Get("victim", f.incs["victim"])
				if err == nil && string(v) != string(f.vals["victim"]) {
					err = errors.New("wrong bytes")
				}
				got <- err
			}()
			<-entered // the read has pinned bucket 1 and is inside ReadAt

			o := testGCOptions()
			if timeout {
				o.DrainTimeout = 1 // nanosecond: the pinned reader cannot finish in time
				newGCWorker(f.s, o, nil).pass()
				if st := f.s.GCStats(); !st.CleanupPending || !strings.Contains(st.LastError, "drain") {
					t.Fatalf("stats %+v", st)
				}
				if !f.exists(bucketName(1)) || !f.exists(metaName(1)) {
					t.Fatal("source unlinked while a reader pinned it")
				}
				close(release)
				if err := <-got; err != nil {
					t.Fatalf("reader of the source: %v", err)
				}
				newGCWorker(f.s, o, nil).pass()
			} else {
				committed := make(chan struct{})
				filesAtCommit := true
				f.s.hook = func(step string) {
					if step == hookGCAfterCommit {
						filesAtCommit = f.exists(bucketName(1))
						close(committed)
					}
				}
				done := make(chan struct{})
				go func() { newGCWorker(f.s, o, nil).pass(); close(done) }()
				<-committed
				close(release)
				if err := <-got; err != nil {
					t.Fatalf("reader of the source: %v", err)
				}
				<-done
				if !filesAtCommit {
					t.Fatal("source gone before the round drained")
				}
			}
			if f.exists(bucketName(1)) || f.s.GCStats().CleanupPending {
				t.Fatalf("source not unlinked once drained: %+v", f.s.GCStats())
			}
			f.check()
		})
	}
}

// A put planned into the open bucket just before a round sealed and
// replaced it must not append to the retired file (it would be acked and
// then unlinked): the store plans it again into a new bucket, so the put
// succeeds and its bytes survive the round and a reopen.
func TestPutPlannedIntoSealedOpenBucketIsPlacedAgain(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a", "b", "c"} {
		f.put(k, 1000)
	}
	f.kill("a", "b") // the open bucket 1 is a candidate
	planned, release := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	var err error
	f.s.hook = func(step string) {
		switch step {
		case hookPutPlanned:
			select {
			case <-planned:
			default:
				close(planned)
				<-release
			}
		case hookGCAfterCommit:
			// Bucket 1 is retired but its file is still open and on disk:
			// let the queued commit run now.
			close(release)
			err = <-errc
		}
	}
	f.n++
	inc := incN(f.n)
	go func() { errc <- f.s.Put("late", "t", inc, []byte("late bytes")) }()
	<-planned // the committer has assigned "late" to bucket 1
	w := newGCWorker(f.s, testGCOptions(), nil)
	w.pass()
	f.s.hook = nil
	if f.exists(metaName(1)) {
		t.Fatal("bucket 1 was not replaced")
	}
	if err != nil {
		t.Fatalf("put planned into the retired bucket: %v, want it placed again", err)
	}
	f.incs["late"], f.vals["late"] = inc, []byte("late bytes")
	f.check()
	f.reopen(StoreOptions{})
	f.check()
}

// checkStore is gcFixture.check against another store over a copy.
func checkStore(t *testing.T, s *Store, f *gcFixture) {
	t.Helper()
	saved := f.s
	f.s = s
	defer func() { f.s = saved }()
	f.check()
}
