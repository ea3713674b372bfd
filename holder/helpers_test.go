package holder

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"go.uber.org/goleak"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
)

// childEnv selects a child-process role when the test binary is re-executed
// (second-process and crash-point tests).
const childEnv = "SEXTON_HOLDER_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}

const testCluster = 0xC1

func incN(n uint64) api.ObjectIncarnation { return api.ObjectIncarnation{High: testCluster, Low: n} }

func valueOf(key string, n int) []byte {
	return bytes.Repeat([]byte(key+"|"), n/(len(key)+1)+1)[:n]
}

func openT(t testing.TB, dir string, opts StoreOptions) *Store {
	t.Helper()
	s, err := OpenStore(dir, opts)
	if err != nil {
		t.Fatalf("OpenStore(%s): %v", dir, err)
	}
	return s
}

// openTemp opens a store with default options in a fresh directory and
// answers both; the test closes the store.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	return openT(t, dir, StoreOptions{}), dir
}

func mustPut(t testing.TB, s *Store, key string, inc api.ObjectIncarnation, v []byte) {
	t.Helper()
	if err := s.Put(key, "t", inc, v); err != nil {
		t.Fatalf("Put(%q, %s): %v", key, inc, err)
	}
}

// mustPutEach puts keys[i] with incarnation i+1 and a value of size bytes
// made from the key (valueOf).
func mustPutEach(t testing.TB, s *Store, size int, keys ...string) {
	t.Helper()
	for i, k := range keys {
		mustPut(t, s, k, incN(uint64(i+1)), valueOf(k, size))
	}
}

func mustGet(t testing.TB, s *Store, key string, inc api.ObjectIncarnation, want []byte) {
	t.Helper()
	got, err := s.Get(key, inc)
	if err != nil {
		t.Fatalf("Get(%q, %s): %v", key, inc, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q, %s) = %d bytes, not the bytes put", key, inc, len(got))
	}
}

func task(s *Store, id uint64, key string, inc api.ObjectIncarnation) api.LocalDeleteTask {
	return api.LocalDeleteTask{ID: id, Segment: s.SegmentID(), Key: key, Incarnation: inc}
}

func outcomes(rs []api.TaskResult) []api.AckOutcome {
	out := make([]api.AckOutcome, len(rs))
	for i, r := range rs {
		out[i] = r.Outcome
	}
	return out
}

func wantOutcomes(t testing.TB, rs []api.TaskResult, want ...api.AckOutcome) {
	t.Helper()
	got := outcomes(rs)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
}

func sameSnapshot(t testing.TB, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for n, b := range before {
		if a, ok := after[n]; !ok {
			diffs = append(diffs, n+" removed")
		} else if a != b {
			diffs = append(diffs, n+" changed")
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			diffs = append(diffs, n+" added")
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("directory changed: %v", diffs)
	}
}

// readMetaFile decodes a bucket's committed .meta straight from disk.
func readMetaFile(t testing.TB, dir string, id uint64) *BucketMetadata {
	t.Helper()
	name := filepath.Join(dir, metaName(id))
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeMeta(name, id, b)
	if err != nil {
		t.Fatal(err)
	}
	// The bucket's metadata is its .meta with its journal replayed.
	if _, err := readJournal(fsys.OS{}, dir, id, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func tombstonedOnDisk(t testing.TB, dir string, id uint64, key string, inc api.ObjectIncarnation) bool {
	t.Helper()
	for _, o := range readMetaFile(t, dir, id).Objects {
		if o.Key == key && o.Incarnation == inc {
			return o.Tombstoned
		}
	}
	t.Fatalf("%q %s not in bucket %d metadata", key, inc, id)
	return false
}

// faultyOpts is options over a fault-injecting OS filesystem.
func faultyOpts(keysLimit int) (StoreOptions, *errorfs.Faulty) {
	f := errorfs.NewFaulty(fsys.OS{})
	return StoreOptions{BucketKeysLimit: keysLimit, FS: f}, f
}

// openFaulty opens a store over faultyOpts(keysLimit) in a fresh directory,
// closed when the test ends.
func openFaulty(t testing.TB, keysLimit int) (*Store, *errorfs.Faulty) {
	t.Helper()
	opts, ffs := faultyOpts(keysLimit)
	s := openT(t, t.TempDir(), opts)
	t.Cleanup(func() { s.Close() })
	return s, ffs
}

// bucketOf is the bucket a live record sits in.
func bucketOf(t testing.TB, s *Store, key string, inc api.ObjectIncarnation) uint64 {
	t.Helper()
	return liveAt(t, s, key, inc).bucket
}

// liveAt is where a live record sits.
func liveAt(t testing.TB, s *Store, key string, inc api.ObjectIncarnation) location {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	loc, ok := s.idx.live[objectKey{key, inc}]
	if !ok {
		t.Fatalf("%q %s not live", key, inc)
	}
	return loc
}

func ruleLock(err error) errorfs.Rule { return errorfs.Rule{Op: errorfs.OpLock, Err: err} }
