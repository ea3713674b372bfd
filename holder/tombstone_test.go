package holder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sexton/api"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
)

func TestDeleteIsDurableAndCannotDeleteRecreatedKey(t *testing.T) {
	s, dir := openTemp(t)
	old, recreated, neverHere := incN(10), incN(20), incN(5)
	v1, v2 := valueOf("old", 100), valueOf("new", 200)
	mustPut(t, s, "k", old, v1)
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", old)}), api.AckRemoved)
	if _, err := s.Get("k", old); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after tombstone: %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, StoreOptions{})
	if _, err := s.Get("k", old); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after reopen: %v, want ErrNotFound", err)
	}
	if !tombstonedOnDisk(t, dir, 1, "k", old) {
		t.Fatal("tombstone is not in the committed metadata")
	}
	if err := s.Put("k", "t", old, v1); !errors.Is(err, ErrTombstoned) {
		t.Fatalf("re-put of a deleted incarnation: %v, want ErrTombstoned", err)
	}
	// The key is recreated under a new incarnation; late tasks for older
	// incarnations must not touch it.
	mustPut(t, s, "k", recreated, v2)
	rs := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", old), task(s, 2, "k", neverHere)})
	wantOutcomes(t, rs, api.AckAlreadyRemoved, api.AckStaleVersion)
	mustGet(t, s, "k", recreated, v2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	mustGet(t, s, "k", recreated, v2)
	if _, err := s.Get("k", old); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old incarnation after second reopen: %v", err)
	}
	refs := s.LiveRefs()
	if len(refs) != 1 || refs[0] != (api.ObjectRef{Key: "k", Incarnation: recreated}) {
		t.Fatalf("LiveRefs = %v, want only the recreated incarnation", refs)
	}
	if sc := s.Scan(); len(sc) != 1 || sc[0].Incarnation != recreated {
		t.Fatalf("Scan = %v", sc)
	}
}

func TestOneInvalidTaskDoesNotSuppressAnotherBucket(t *testing.T) {
	s, ffs := openFaulty(t, 2)
	for i, k := range []string{"a1", "a2", "b1", "b2"} { // a* in bucket 1, b* in bucket 2
		mustPut(t, s, k, incN(uint64(i+1)), valueOf(k, 64))
	}
	if bucketOf(t, s, "a1", incN(1)) == bucketOf(t, s, "b1", incN(3)) {
		t.Fatal("setup: records share a bucket")
	}

	t.Run("invalid tasks", func(t *testing.T) {
		foreign := task(s, 3, "a2", incN(2))
		foreign.Segment = "another-segment"
		rs := s.BatchMarkDeleted([]api.LocalDeleteTask{
			task(s, 1, "", incN(1)),        // no record can have an empty key
			task(s, 2, "a1", incN(99)),     // wrong incarnation
			foreign,                        // not this segment's task
			task(s, 4, "b1", incN(3)),      // valid, other bucket
			task(s, 5, "missing", incN(1)), // absent key
		})
		wantOutcomes(t, rs, api.AckStaleVersion, api.AckStaleVersion, api.AckRetryableFailure, api.AckRemoved, api.AckStaleVersion)
		if rs[3].TaskID != 4 || rs[3].Key != "b1" || rs[3].Incarnation != incN(3) {
			t.Fatalf("result does not name its task: %+v", rs[3])
		}
		mustGet(t, s, "a1", incN(1), valueOf("a1", 64))
		mustGet(t, s, "a2", incN(2), valueOf("a2", 64))
	})

	t.Run("failing bucket", func(t *testing.T) {
		ffs.Inject(errorfs.Rule{Op: errorfs.OpRename, Pattern: metaTmpName(1), Err: syscall.EIO})
		defer ffs.ClearRules()
		rs := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 6, "a1", incN(1)), task(s, 7, "b2", incN(4))})
		wantOutcomes(t, rs, api.AckRetryableFailure, api.AckRemoved)
		mustGet(t, s, "a1", incN(1), valueOf("a1", 64))
		if _, err := s.Get("b2", incN(4)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("b2: %v", err)
		}
	})
}

func TestOnePersistencePerBucket(t *testing.T) {
	s, ffs := openFaulty(t, 10)
	n := uint64(0)
	var tasks []api.LocalDeleteTask
	for b := 0; b < 4; b++ {
		for i := 0; i < 10; i++ {
			n++
			k := "key-" + string(rune('a'+b)) + string(rune('0'+i))
			mustPut(t, s, k, incN(n), valueOf(k, 50))
			if b < 3 { // buckets 1-3 get real tasks, bucket 4 only stale ones
				tasks = append(tasks, task(s, n, k, incN(n)))
			} else {
				tasks = append(tasks, task(s, n, k, incN(n+1000)))
			}
		}
	}
	if got := len(s.BucketStats()); got != 4 {
		t.Fatalf("setup: %d buckets", got)
	}
	ffs.ResetCounts()
	rs := s.BatchMarkDeleted(tasks)
	for i, r := range rs {
		want := api.AckRemoved
		if i >= 30 {
			want = api.AckStaleVersion
		}
		if r.Outcome != want {
			t.Fatalf("task %d: %v, want %v", i, r.Outcome, want)
		}
	}
	for _, c := range []struct {
		op      errorfs.Op
		pattern string
	}{
		{errorfs.OpWrite, "*.meta.tmp"}, {errorfs.OpSync, "*.meta.tmp"}, {errorfs.OpRename, "*.meta.tmp"},
	} {
		if got := ffs.CountMatching(c.op, c.pattern); got != 3 {
			t.Errorf("%s %q: %d operations for 3 affected buckets, want 3", c.op, c.pattern, got)
		}
	}
	// The ten stale tasks share one floor persistence; one directory
	// fsync per persistence.
	if got := ffs.CountMatching(errorfs.OpRename, floorTmpName); got != 1 {
		t.Errorf("floor renames: %d, want 1", got)
	}
	if got := ffs.Count(errorfs.OpSyncDir); got != 4 {
		t.Errorf("directory fsyncs: %d, want 4", got)
	}
	if got := ffs.CountMatching(errorfs.OpWrite, "*.bucket") + ffs.CountMatching(errorfs.OpSync, "*.bucket"); got != 0 {
		t.Errorf("tombstoning touched bucket data %d times", got)
	}
	// A replay of the same batch persists nothing.
	ffs.ResetCounts()
	for _, r := range s.BatchMarkDeleted(tasks[:30]) {
		if r.Outcome != api.AckAlreadyRemoved {
			t.Fatalf("replay: %v", r.Outcome)
		}
	}
	if got := ffs.Count(errorfs.OpRename) + ffs.Count(errorfs.OpSync); got != 0 {
		t.Errorf("replay issued %d renames/fsyncs", got)
	}
	u := s.Usage()
	if u.LiveObjects != 10 || u.TombstonedObjects != 30 || u.DeadBytes != 30*50 || u.LiveBytes != 10*50 {
		t.Fatalf("usage %+v", u)
	}
}

func TestIOFailureIsRetryableAndChangesNothing(t *testing.T) {
	cases := []struct {
		name string
		rule errorfs.Rule
	}{
		{"write", errorfs.Rule{Op: errorfs.OpWrite, Pattern: "*.meta.tmp", Err: syscall.ENOSPC}},
		{"fsync", errorfs.Rule{Op: errorfs.OpSync, Pattern: "*.meta.tmp", Err: syscall.EIO}},
		{"rename", errorfs.Rule{Op: errorfs.OpRename, Pattern: "*.meta.tmp", Err: syscall.EIO}},
		{"dir fsync", errorfs.Rule{Op: errorfs.OpSyncDir, Err: syscall.EIO}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts, ffs := faultyOpts(0)
			s := openT(t, dir, opts)
			mustPut(t, s, "x", incN(1), valueOf("x", 500))
			mustPut(t, s, "y", incN(2), valueOf("y", 500))
			usage, stats, refs := s.Usage(), s.BucketStats(), s.LiveRefs()
			before := testutil.DirContents(t, dir)

			ffs.Inject(c.rule)
			rs := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "x", incN(1)), task(s, 2, "y", incN(2))})
			wantOutcomes(t, rs, api.AckRetryableFailure, api.AckRetryableFailure)
			for _, r := range rs {
				// What the master shows as the task's last error.
				if !strings.Contains(r.Detail, "persisting tombstone") {
					t.Errorf("task %d failed with detail %q, want why", r.TaskID, r.Detail)
				}
			}
			// Nothing in memory changed.
			mustGet(t, s, "x", incN(1), valueOf("x", 500))
			mustGet(t, s, "y", incN(2), valueOf("y", 500))
			if s.Usage() != usage || len(s.LiveRefs()) != len(refs) || s.BucketStats()[0] != stats[0] {
				t.Fatalf("in-memory state changed: %+v vs %+v", s.Usage(), usage)
			}
			if c.rule.Op != errorfs.OpSyncDir {
				// Before the rename nothing on disk changed either: the old
				// .meta is authoritative and no tmp is left behind.
				sameSnapshot(t, before, testutil.DirContents(t, dir))
			}

			ffs.ClearRules()
			rs = s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "x", incN(1)), task(s, 2, "y", incN(2))})
			wantOutcomes(t, rs, api.AckRemoved, api.AckRemoved)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openT(t, dir, StoreOptions{})
			defer s.Close()
			if _, err := s.Get("x", incN(1)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("after retry and reopen: %v", err)
			}
		})
	}
}

func TestTombstoneThenPutOnOpenBucketKeepsBoth(t *testing.T) {
	// Tombstones and puts both rewrite the open bucket's metadata; each must
	// start from the other's committed copy.
	s, dir := openTemp(t)
	mustPut(t, s, "p", incN(1), valueOf("p", 10))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "p", incN(1))}), api.AckRemoved)
	mustPut(t, s, "q", incN(2), valueOf("q", 10))
	s.Close()
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if _, err := s.Get("p", incN(1)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("put after tombstone revived p: %v", err)
	}
	mustGet(t, s, "q", incN(2), valueOf("q", 10))
	if _, err := os.Stat(filepath.Join(dir, metaTmpName(1))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tmp left behind: %v", err)
	}
}
