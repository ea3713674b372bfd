package holder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/fsys/errorfs"
)

func TestPutIsIdempotentAndRefusesConflicts(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	v := valueOf("k", 300)
	mustPut(t, s, "k", incN(1), v)
	mustPut(t, s, "k", incN(1), v) // same bytes: no-op
	if err := s.Put("k", "t", incN(1), valueOf("other", 300)); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting put: %v", err)
	}
	if u := s.Usage(); u.LiveObjects != 1 || u.LiveBytes != 300 {
		t.Fatalf("usage %+v", u)
	}
	if err := s.Put("", "t", incN(1), v); api.CodeOf(err) != api.CodeInvalidKey {
		t.Fatalf("empty key: %v", err)
	}
	mustGet(t, s, "k", incN(1), v)
}

func TestPutRollsBucketsAtLimits(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 3, BucketSizeLimit: 1000})
	mustPut(t, s, "a", incN(1), valueOf("a", 400))
	mustPut(t, s, "b", incN(2), valueOf("b", 400))
	mustPut(t, s, "c", incN(3), valueOf("c", 400)) // 1200 > 1000: new bucket
	mustPut(t, s, "d", incN(4), valueOf("d", 10))
	mustPut(t, s, "e", incN(5), valueOf("e", 10))
	mustPut(t, s, "f", incN(6), valueOf("f", 10)) // 4th key: new bucket
	if err := s.Put("big", "t", incN(7), make([]byte, 1001)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized put: %v", err)
	}
	mustPut(t, s, "full", incN(8), make([]byte, 1000)) // exactly the limit fits a fresh bucket
	st := s.BucketStats()
	var counts []int
	for _, b := range st {
		counts = append(counts, b.LiveCount)
	}
	if fmt.Sprint(counts) != "[2 3 1 1]" || !st[3].Open || st[0].Open {
		t.Fatalf("buckets %+v", st)
	}
	s.Close()
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 3, BucketSizeLimit: 1000})
	defer s.Close()
	for i, k := range []string{"a", "b", "c"} {
		mustGet(t, s, k, incN(uint64(i+1)), valueOf(k, 400))
	}
	mustGet(t, s, "full", incN(8), make([]byte, 1000))
}

func TestPutIOFailureIsAnErrorAndLeavesNoRecord(t *testing.T) {
	for _, rule := range []errorfs.Rule{
		{Op: errorfs.OpWrite, Pattern: "*.bucket", Err: syscall.ENOSPC, Once: true},
		{Op: errorfs.OpSync, Pattern: "*.bucket", Err: syscall.EIO, Once: true},
		{Op: errorfs.OpWrite, Pattern: "*.journal", Err: syscall.EIO, Once: true},
		{Op: errorfs.OpSync, Pattern: "*.journal", Err: syscall.EIO, Once: true},
	} {
		t.Run(string(rule.Op)+" "+rule.Pattern, func(t *testing.T) {
			dir := t.TempDir()
			opts, ffs := faultyOpts(0)
			s := openT(t, dir, opts)
			mustPut(t, s, "before", incN(1), []byte("before"))
			value := []byte("value")
			if rule.Op == errorfs.OpSync && rule.Pattern == "*.bucket" {
				// Too large to travel in the journal record: its data is
				// fdatasynced first.
				value = valueOf("value", journalInlineMax+1)
			}
			ffs.Inject(rule)
			err := s.Put("k", "t", incN(2), value)
			wantCode := api.CodeUnavailable
			if errors.Is(rule.Err, syscall.ENOSPC) {
				wantCode = api.CodeNoSpace
			}
			if err == nil || api.CodeOf(err) != wantCode || !errors.Is(err, rule.Err) {
				t.Fatalf("put through an I/O error: %v, want code %s wrapping %v", err, wantCode, rule.Err)
			}
			if _, err := s.Get("k", incN(2)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("failed put is visible: %v", err)
			}
			mustPut(t, s, "k", incN(2), value) // the rule was once: retry works
			s.Close()
			s = openT(t, dir, StoreOptions{})
			defer s.Close()
			mustGet(t, s, "k", incN(2), value)
			mustGet(t, s, "before", incN(1), []byte("before"))
		})
	}
}

func TestGroupCommitSharesFsyncs(t *testing.T) {
	const n = 16
	dir := t.TempDir()
	opts, ffs := faultyOpts(0)
	s := openT(t, dir, opts)
	entered, release := make(chan struct{}), make(chan struct{})
	// Hold the first commit inside its data fsync until the other n-1 puts
	// are queued, so the test does not depend on scheduling.
	ffs.Inject(errorfs.Rule{Op: errorfs.OpSync, Pattern: "*.bucket", Once: true, Hook: func(string) {
		close(entered)
		<-release
	}})
	errs := make(chan error, n)
	put := func(i int) {
		k := fmt.Sprintf("gc-%02d", i)
		errs <- s.Put(k, "t", incN(uint64(i+1)), valueOf(k, 4096))
	}
	go put(0)
	select {
	case <-entered:
	case <-time.After(time.Minute): // a hang guard, not a performance bound
		t.Fatal("the first commit never fsynced its data")
	}
	for i := 1; i < n; i++ {
		go put(i)
	}
	for len(s.putCh) < n-1 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The first commit fdatasyncs its data and writes the new bucket's
	// .meta; the second appends one journal record carrying its 15 values
	// (60 KiB) and fdatasyncs only the journal.
	dataSyncs := ffs.CountMatching(errorfs.OpSync, "*.bucket")
	metaPersists := ffs.CountMatching(errorfs.OpRename, "*.meta.tmp")
	journalSyncs := ffs.CountMatching(errorfs.OpSync, "*.journal")
	if dataSyncs != 1 || metaPersists != 1 || journalSyncs != 1 {
		t.Fatalf("%d puts cost %d data fsyncs, %d metadata persistences and %d journal syncs, want 1, 1 and 1", n, dataSyncs, metaPersists, journalSyncs)
	}
	s.Close()
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("gc-%02d", i)
		mustGet(t, s, k, incN(uint64(i+1)), valueOf(k, 4096))
	}
}

func TestConcurrentPutsGetsAndTombstones(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 7})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				k := fmt.Sprintf("w%d-%d", w, i)
				inc := incN(uint64(w*100 + i + 1))
				if err := s.Put(k, "t", inc, valueOf(k, 100)); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if r := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, k, inc)}); r[0].Outcome != api.AckRemoved {
						t.Errorf("%s: %v", k, r[0].Outcome)
					}
				} else if got, err := s.Get(k, inc); err != nil || string(got) != string(valueOf(k, 100)) {
					t.Errorf("%s: %v", k, err)
				}
			}
		}(w)
	}
	wg.Wait()
	s.Close()
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 7})
	defer s.Close()
	if u := s.Usage(); u.LiveObjects != 4*12 || u.TombstonedObjects != 4*13 {
		t.Fatalf("usage after reopen %+v", u)
	}
}

func TestCorruptRecordIsAnErrorNotData(t *testing.T) {
	s, dir := openTemp(t)
	mustPut(t, s, "good", incN(1), valueOf("good", 1000))
	mustPut(t, s, "bad", incN(2), valueOf("bad", 1000))
	// The journal's copy of "bad" would be written back over the damage
	// at open: fold it into the .meta, so the bucket file holds the only
	// copy.
	if err := s.CompactJournals(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	bp := filepath.Join(dir, bucketName(1))
	data, _ := os.ReadFile(bp)
	data[1500] ^= 0xff // inside "bad", which starts at offset 1000
	if err := os.WriteFile(bp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{})
	got, err := s.Get("bad", incN(2))
	if !errors.Is(err, ErrCorrupt) || got != nil {
		t.Fatalf("corrupt record: %d bytes, %v; want no bytes and ErrCorrupt", len(got), err)
	}
	if !strings.Contains(err.Error(), "bucket 1 offset 1000") {
		t.Fatalf("error does not name bucket and offset: %v", err)
	}
	if api.CodeOf(err) != api.CodeCorrupt {
		t.Fatalf("code %v", api.CodeOf(err))
	}
	mustGet(t, s, "good", incN(1), valueOf("good", 1000))
	s.Close()

	// A data file shorter than its committed metadata fails closed at open.
	if err := os.Truncate(bp, 1500); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), bucketName(1)) {
		t.Fatalf("truncated bucket: %v", err)
	}
}

func TestClosedStoreRefusesWork(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	mustPut(t, s, "k", incN(1), []byte("v"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := s.Put("k2", "t", incN(2), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("put: %v", err)
	}
	if _, err := s.Get("k", incN(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("get: %v", err)
	}
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(1))}), api.AckRetryableFailure)
}
