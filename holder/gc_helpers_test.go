package holder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/fsys"
)

// testGCOptions is the default policy with a drain bound tests can wait
// out.
func testGCOptions() GCOptions {
	o := DefaultGCOptions()
	o.DrainTimeout = 10 * time.Second
	return o
}

// gcFixture is a store of 4-key buckets filled with named objects.
type gcFixture struct {
	t    *testing.T
	dir  string
	s    *Store
	incs map[string]api.ObjectIncarnation
	vals map[string][]byte
	dead map[string]bool
	n    uint64
}

func newGCFixture(t *testing.T, opts StoreOptions) *gcFixture {
	t.Helper()
	return newGCFixtureAt(t, t.TempDir(), opts)
}

// newGCFixtureAt is newGCFixture in a given directory.
func newGCFixtureAt(t *testing.T, dir string, opts StoreOptions) *gcFixture {
	t.Helper()
	if opts.BucketKeysLimit == 0 {
		opts.BucketKeysLimit = 4
	}
	f := &gcFixture{t: t, dir: dir, incs: map[string]api.ObjectIncarnation{}, vals: map[string][]byte{}, dead: map[string]bool{}}
	f.s = openT(t, dir, opts)
	t.Cleanup(func() { f.s.Close() })
	return f
}

// put stores key with size bytes, one Put at a time so buckets fill in order.
func (f *gcFixture) put(key string, size int) {
	f.t.Helper()
	f.n++
	f.incs[key] = incN(f.n)
	f.vals[key] = valueOf(key, size)
	mustPut(f.t, f.s, key, f.incs[key], f.vals[key])
}

// kill tombstones keys and requires Removed for each.
func (f *gcFixture) kill(keys ...string) {
	f.t.Helper()
	tasks := make([]api.LocalDeleteTask, len(keys))
	want := make([]api.AckOutcome, len(keys))
	for i, k := range keys {
		tasks[i] = task(f.s, uint64(i+1), k, f.incs[k])
		want[i] = api.AckRemoved
		f.dead[k] = true
	}
	wantOutcomes(f.t, f.s.BatchMarkDeleted(tasks), want...)
}

// check asserts every live key reads back byte-identical and no dead key
// is visible, nor accepts a late write (whether GC reclaimed its record or
// not), nor comes back Removed when its task is replayed.
func (f *gcFixture) check() {
	f.t.Helper()
	for k, inc := range f.incs {
		if f.dead[k] {
			if _, err := f.s.Get(k, inc); !errors.Is(err, ErrNotFound) {
				f.t.Fatalf("deleted %q is visible: %v", k, err)
			}
			if err := f.s.Put(k, "t", inc, []byte("late")); !errors.Is(err, ErrTombstoned) {
				f.t.Fatalf("late write of deleted %q %s: %v, want refused", k, inc, err)
			}
			continue
		}
		mustGet(f.t, f.s, k, inc, f.vals[k])
	}
	for k := range f.dead {
		r := f.s.BatchMarkDeleted([]api.LocalDeleteTask{task(f.s, 1, k, f.incs[k])})
		if o := r[0].Outcome; o != api.AckAlreadyRemoved && o != api.AckStaleVersion {
			f.t.Fatalf("replayed delete of %q answered %v: the record was live again", k, o)
		}
	}
}

func (f *gcFixture) reopen(opts StoreOptions) {
	f.t.Helper()
	if err := f.s.Close(); err != nil {
		f.t.Fatal(err)
	}
	if opts.BucketKeysLimit == 0 {
		opts.BucketKeysLimit = 4
	}
	f.s = openT(f.t, f.dir, opts)
}

func (f *gcFixture) exists(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, name))
	return err == nil
}

func (f *gcFixture) bucketIDs() []uint64 {
	var out []uint64
	for _, b := range f.s.BucketStats() {
		out = append(out, b.ID)
	}
	return out
}

// copyDir copies every regular file of src into a new temp dir: the state
// a crash at this instant would leave (the page cache survives a process
// crash).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	return dst
}

func readIntentFile(t *testing.T, dir string) *gcIntent {
	t.Helper()
	in, err := readGCIntent(fsys.OS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func names(ids ...uint64) []string {
	var out []string
	for _, id := range ids {
		out = append(out, bucketName(id), metaName(id))
	}
	return out
}

func describe(in *gcIntent) string {
	if in == nil {
		return "no intent"
	}
	return fmt.Sprint(in)
}

// gcCrashScenarios set up a directory for a child's GC pass. "merge": two
// half-dead buckets (one with values longer than the copy buffer) merge
// into a target; "unlink": a fully dead bucket goes without replacement
// (the copy and target steps are not on its path).
var gcCrashScenarios = map[string]func(f *gcFixture){
	"merge": func(f *gcFixture) {
		for _, k := range []string{"a1", "a2", "a3", "a4"} {
			f.put(k, 3000)
		}
		f.put("b1", 3000)
		f.put("b2", 3<<20/2)
		f.put("b3", 3000)
		f.put("b4", 3<<20/2)
		for _, k := range []string{"c1", "c2", "c3"} {
			f.put(k, 3000)
		}
		f.kill("a1", "a3", "b1", "b4")
	},
	"unlink": func(f *gcFixture) {
		for _, k := range []string{"a1", "a2", "a3", "a4", "b1", "b2"} {
			f.put(k, 3000)
		}
		f.kill("a1", "a2", "a3", "a4")
	},
}
