package holder

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
)

// fastDir is a scratch directory on tmpfs when there is one: the model test
// runs thousands of fsyncs and checks logic, not the disk.
func fastDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "holder-model-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// modelDirs answers a fresh directory (named prefix-N) under fastDir on
// each call: one per rapid run.
func modelDirs(t *testing.T, prefix string) func() string {
	root := fastDir(t)
	run := 0
	return func() string {
		run++
		return fmt.Sprintf("%s/%s-%d", root, prefix, run)
	}
}

// newModel is an empty model: the live records' values, the deleted
// incarnations, and per key the highest absent incarnation tombstoned.
func newModel() (map[objectKey][]byte, map[objectKey]bool, map[string]api.ObjectIncarnation) {
	return map[objectKey][]byte{}, map[objectKey]bool{}, map[string]api.ObjectIncarnation{}
}

// TestStoreMatchesModel drives random puts, tombstone batches (sometimes
// with every persistence failing), reads and restarts against a map model:
// every outcome, every read and the live set must match after each step.
func TestStoreMatchesModel(t *testing.T) {
	dirs := modelDirs(t, "store")
	rapid.Check(t, func(rt *rapid.T) {
		dir := dirs()
		s, ffs, opts := openModelStore(rt, dir)
		defer func() { s.Close() }()
		live, dead, floor := newModel()
		below := func(k objectKey) bool { f, ok := floor[k.key]; return ok && !f.Less(k.inc) }
		genKey := rapid.SampledFrom([]string{"a", "b", "c"})
		genInc := rapid.Uint64Range(1, 4)

		check := func() {
			checkLiveRefs(rt, s, live)
			u := s.Usage()
			if u.LiveObjects != len(live) {
				rt.Fatalf("usage %+v, model has %d live", u, len(live))
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"put": func(rt *rapid.T) {
				k := objectKey{genKey.Draw(rt, "key"), incN(genInc.Draw(rt, "inc"))}
				v := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "value")
				err := s.Put(k.key, "t", k.inc, v)
				switch old, ok := live[k]; {
				case dead[k] || (!ok && below(k)):
					if !errors.Is(err, ErrTombstoned) {
						rt.Fatalf("put of deleted %v: %v", k, err)
					}
				case ok && string(old) != string(v):
					if !errors.Is(err, ErrConflict) {
						rt.Fatalf("conflicting put %v: %v", k, err)
					}
				default:
					if err != nil {
						rt.Fatalf("put %v: %v", k, err)
					}
					if !ok {
						live[k] = slices.Clone(v)
					}
				}
			},
			"tombstone": func(rt *rapid.T) {
				n := rapid.IntRange(1, 5).Draw(rt, "tasks")
				failing := rapid.Float64Range(0, 1).Draw(rt, "p") < 0.2
				var tasks []api.LocalDeleteTask
				for i := 0; i < n; i++ {
					tasks = append(tasks, task(s, uint64(i), genKey.Draw(rt, "key"), incN(genInc.Draw(rt, "inc"))))
				}
				if failing {
					ffs.Inject(errorfs.Rule{Op: errorfs.OpRename, Err: syscall.EIO})
				}
				rs := s.BatchMarkDeleted(tasks)
				ffs.ClearRules()
				// Absent records share one floor persistence, which fails
				// with the rest when it has anything to write.
				raised := map[string]api.ObjectIncarnation{}
				for _, tk := range tasks {
					k := objectKey{tk.Key, tk.Incarnation}
					if _, isLive := live[k]; !isLive && !dead[k] && !below(k) {
						if f, ok := raised[k.key]; !ok || f.Less(k.inc) {
							raised[k.key] = k.inc
						}
					}
				}
				absent := api.AckStaleVersion
				if failing && len(raised) > 0 {
					absent = api.AckRetryableFailure
				}
				removed := map[objectKey]bool{}
				for i, tk := range tasks {
					k := objectKey{tk.Key, tk.Incarnation}
					want := absent
					if _, isLive := live[k]; isLive {
						want = api.AckRemoved
						if failing {
							want = api.AckRetryableFailure
						}
						removed[k] = true
					} else if dead[k] {
						want = api.AckAlreadyRemoved
					}
					if rs[i].Outcome != want {
						rt.Fatalf("task %d %v: %v, model says %v", i, k, rs[i].Outcome, want)
					}
				}
				if !failing {
					for k := range removed {
						delete(live, k)
						dead[k] = true
					}
					for key, inc := range raised {
						floor[key] = inc
					}
				}
			},
			"get": func(rt *rapid.T) {
				checkGet(rt, s, live, objectKey{genKey.Draw(rt, "key"), incN(genInc.Draw(rt, "inc"))})
			},
			"reopen": func(rt *rapid.T) {
				if err := s.Close(); err != nil {
					rt.Fatal(err)
				}
				var err error
				if s, err = OpenStore(dir, opts); err != nil {
					rt.Fatal(err)
				}
			},
			"": func(rt *rapid.T) { check() },
		})
	})
}

// openModelStore opens a store with small buckets in dir on a filesystem
// that fails on demand.
func openModelStore(rt *rapid.T, dir string) (*Store, *errorfs.Faulty, StoreOptions) {
	ffs := errorfs.NewFaulty(fsys.OS{})
	opts := StoreOptions{BucketKeysLimit: 3, BucketSizeLimit: 64, FS: ffs}
	s, err := OpenStore(dir, opts)
	if err != nil {
		rt.Fatal(err)
	}
	return s, ffs, opts
}

// checkLiveRefs fails unless s's live refs are the model's live set.
func checkLiveRefs(rt *rapid.T, s *Store, live map[objectKey][]byte) {
	var want []api.ObjectRef
	for k := range live {
		want = append(want, api.ObjectRef{Key: k.key, Incarnation: k.inc})
	}
	slices.SortFunc(want, func(a, b api.ObjectRef) int {
		if refLess(a, b) {
			return -1
		}
		return 1
	})
	if got := s.LiveRefs(); fmt.Sprint(got) != fmt.Sprint(want) {
		rt.Fatalf("live refs %v, model %v", got, want)
	}
}

// checkGet fails unless reading k answers the model's value, or
// ErrNotFound when the model has none.
func checkGet(rt *rapid.T, s *Store, live map[objectKey][]byte, k objectKey) {
	got, err := s.Get(k.key, k.inc)
	if want, ok := live[k]; ok {
		if err != nil || string(got) != string(want) {
			rt.Fatalf("get %v: %v", k, err)
		}
	} else if !errors.Is(err, ErrNotFound) {
		rt.Fatalf("get of absent %v: %v", k, err)
	}
}
