package holder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"sexton/api"
)

func mustPutStream(t testing.TB, s *Store, key string, inc api.ObjectIncarnation, v []byte) {
	t.Helper()
	if err := s.PutStream(key, "t", inc, int64(len(v)), bytes.NewReader(v)); err != nil {
		t.Fatalf("PutStream(%q, %s): %v", key, inc, err)
	}
}

// Streamed values of every shape (empty, below and above the O_DIRECT
// size, several chunks, unaligned ends) between small puts read back
// byte-identical, before and after a restart, and the directory checks
// clean.
func TestPutStreamReadsBack(t *testing.T) {
	s, dir := openTemp(t)
	sizes := []int{0, 1, 300 << 10, 3*streamChunk + 4097, directMin, directMin + streamChunk + 1}
	for i, n := range sizes {
		mustPut(t, s, fmt.Sprintf("small-%d", i), incN(uint64(100+i)), valueOf("small", 777+i))
		mustPutStream(t, s, fmt.Sprintf("s-%d", i), incN(uint64(i+1)), valueOf(fmt.Sprintf("s-%d", i), n))
	}
	check := func(s *Store) {
		for i, n := range sizes {
			mustGet(t, s, fmt.Sprintf("s-%d", i), incN(uint64(i+1)), valueOf(fmt.Sprintf("s-%d", i), n))
			mustGet(t, s, fmt.Sprintf("small-%d", i), incN(uint64(100+i)), valueOf("small", 777+i))
		}
	}
	check(s)
	if off := liveAt(t, s, "s-5", incN(6)).offset; off%directAlign != 0 {
		t.Fatalf("a value written with O_DIRECT starts at %d, not on a %d-byte boundary", off, directAlign)
	}
	s.Close()
	wantCleanInspectDir(t, dir)
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	check(s)
	// Putting a stored value again is a no-op; other bytes are a conflict.
	mustPutStream(t, s, "s-4", incN(5), valueOf("s-4", directMin))
	if err := s.PutStream("s-4", "t", incN(5), directMin, bytes.NewReader(valueOf("x", directMin))); !errors.Is(err, ErrConflict) {
		t.Fatalf("other bytes under a stored incarnation: %v, want ErrConflict", err)
	}
	mustGet(t, s, "s-4", incN(5), valueOf("s-4", directMin))
}

// failingReader gives n bytes of v, then fails.
type failingReader struct {
	v []byte
	n int
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("connection reset")
	}
	m := copy(p, r.v[:min(len(r.v), r.n)])
	r.v, r.n = r.v[m:], r.n-m
	return m, nil
}

// A source that fails in the middle of a value leaves no record, and its
// range is given back: the next value goes where it would have gone.
// One that fails while a later range was handed out leaves a hole that
// no record names, and the records around it read back after a restart.
func TestPutStreamSourceFailureLeavesNoRecord(t *testing.T) {
	s, dir := openTemp(t)
	mustPut(t, s, "before", incN(1), valueOf("before", 5000))
	v := valueOf("v", directMin+streamChunk)
	err := s.PutStream("v", "t", incN(2), int64(len(v)), &failingReader{v: v, n: streamChunk + 10})
	if api.CodeOf(err) != api.CodeUnavailable {
		t.Fatalf("failed source: %v, want UNAVAILABLE", err)
	}
	if _, err := s.Get("v", incN(2)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed stream left a record: %v", err)
	}
	mustPutStream(t, s, "w", incN(3), v)
	if off := liveAt(t, s, "w", incN(3)).offset; off != directAlign*2 {
		t.Fatalf("the next stream went to %d, not to the failed one's range at %d", off, directAlign*2)
	}

	// A stream that fails after a later one reserved its range.
	started := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var failErr error
	go func() {
		defer wg.Done()
		r := io.MultiReader(bytes.NewReader(v[:streamChunk]), readerFunc(func([]byte) (int, error) {
			close(started)
			<-release
			return 0, errors.New("connection reset")
		}))
		failErr = s.PutStream("x", "t", incN(4), int64(len(v)), r)
	}()
	<-started
	mustPutStream(t, s, "y", incN(5), v)
	mustPut(t, s, "z", incN(6), []byte("small after the hole"))
	close(release)
	wg.Wait()
	if failErr == nil {
		t.Fatal("the failed stream was acknowledged")
	}
	s.Close()
	wantCleanInspectDir(t, dir)
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	mustGet(t, s, "before", incN(1), valueOf("before", 5000))
	mustGet(t, s, "w", incN(3), v)
	mustGet(t, s, "y", incN(5), v)
	mustGet(t, s, "z", incN(6), []byte("small after the hole"))
	if _, err := s.Get("x", incN(4)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed stream left a record: %v", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// What can be refused without the bytes is refused before one is read:
// a tombstoned incarnation, one below its key's floor, a value larger
// than a bucket, a bad key.
func TestPutStreamRefusesBeforeReading(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{BucketSizeLimit: 8 << 20})
	defer s.Close()
	mustPutStream(t, s, "k", incN(5), valueOf("k", directMin))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(5))}), api.AckRemoved)
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 2, "f", incN(7))}), api.AckStaleVersion)
	untouched := readerFunc(func([]byte) (int, error) {
		t.Fatal("the value was read")
		return 0, nil
	})
	for name, c := range map[string]struct {
		key  string
		inc  api.ObjectIncarnation
		size int64
		want error
	}{
		"tombstoned": {"k", incN(5), directMin, ErrTombstoned},
		"floor":      {"f", incN(6), directMin, ErrTombstoned},
		"too large":  {"big", incN(1), 9 << 20, ErrTooLarge},
	} {
		if err := s.PutStream(c.key, "t", c.inc, c.size, untouched); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if err := s.PutStream("", "t", incN(1), 10, untouched); api.CodeOf(err) != api.CodeInvalidKey {
		t.Errorf("empty key: %v", err)
	}
}

// Concurrent streams and puts into one bucket: every value reads back,
// no two records overlap, and after a restart the same holds.
func TestPutStreamConcurrentWithPuts(t *testing.T) {
	s, dir := openTemp(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 6 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			v := valueOf(fmt.Sprintf("s%d", i), directMin+i*70001)
			errs <- s.PutStream(fmt.Sprintf("s%d", i), "t", incN(uint64(i+1)), int64(len(v)), bytes.NewReader(v))
		}()
		go func() {
			defer wg.Done()
			for j := range 5 {
				errs <- s.Put(fmt.Sprintf("p%d-%d", i, j), "t", incN(uint64(100+i*10+j)), valueOf("p", 100+j))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *Store) {
		for i := range 6 {
			mustGet(t, s, fmt.Sprintf("s%d", i), incN(uint64(i+1)), valueOf(fmt.Sprintf("s%d", i), directMin+i*70001))
			for j := range 5 {
				mustGet(t, s, fmt.Sprintf("p%d-%d", i, j), incN(uint64(100+i*10+j)), valueOf("p", 100+j))
			}
		}
	}
	check(s)
	s.Close()
	wantCleanInspectDir(t, dir)
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	check(s)
}

// nextChunk splits a value into chunks that cover it exactly, none
// larger than a buffer, every one but the last aligned for O_DIRECT, the
// first and last no larger than streamEdgeChunk.
func TestNextChunk(t *testing.T) {
	for _, size := range []int64{1, directAlign, streamEdgeChunk, streamEdgeChunk + 1, 2*streamEdgeChunk + 5,
		streamChunk, streamChunk + streamEdgeChunk, streamChunk + streamEdgeChunk + 1, 16 << 20, 3*streamChunk + 4097} {
		var chunks []int64
		for done := int64(0); done < size; {
			n := nextChunk(done, size-done)
			if n <= 0 || n > streamChunk || n > size-done {
				t.Fatalf("size %d: chunk of %d bytes at %d", size, n, done)
			}
			done += n
			if done < size && n%directAlign != 0 {
				t.Fatalf("size %d: chunk of %d bytes at %d is not the last and not aligned", size, n, done-n)
			}
			chunks = append(chunks, n)
		}
		if first, last := chunks[0], chunks[len(chunks)-1]; first > streamEdgeChunk || last > streamEdgeChunk {
			t.Fatalf("size %d: chunks %v: the first or last is over %d", size, chunks, streamEdgeChunk)
		}
		if size >= 16<<20 && len(chunks) > 2+int(size/streamChunk) {
			t.Fatalf("size %d: %d chunks %v: the middle is not in %d-byte chunks", size, len(chunks), chunks, streamChunk)
		}
	}
}
