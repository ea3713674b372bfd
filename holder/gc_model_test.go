package holder

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"sexton/api"
	"sexton/internal/fsys/errorfs"
)

// TestGCMatchesModel drives random puts, tombstones, reads, GC passes
// (with a random filesystem operation failing during some of them) and
// restarts against a map model. GC must never change what is visible: the
// live set and every read match the model after each step, a deleted
// incarnation never reads back, and its replayed task is AlreadyRemoved or
// (once GC reclaimed it) StaleVersion — never Removed.
func TestGCMatchesModel(t *testing.T) {
	dirs := modelDirs(t, "gc")
	faultOps := []errorfs.Op{errorfs.OpRename, errorfs.OpSyncDir, errorfs.OpRemove, errorfs.OpWrite, errorfs.OpSync, errorfs.OpOpen, errorfs.OpRead}
	rapid.Check(t, func(rt *rapid.T) {
		dir := dirs()
		s, ffs, opts := openModelStore(rt, dir)
		defer func() { s.Close() }()
		live, dead, floor := newModel()
		genKey := rapid.SampledFrom([]string{"a", "b", "c", "d"})
		genInc := rapid.Uint64Range(1, 4)
		gco := testGCOptions()

		rt.Repeat(map[string]func(*rapid.T){
			"put": func(rt *rapid.T) {
				k := objectKey{genKey.Draw(rt, "key"), incN(genInc.Draw(rt, "inc"))}
				v := rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(rt, "value")
				err := s.Put(k.key, "t", k.inc, v)
				if f, ok := floor[k.key]; dead[k] || (!hasKey(live, k) && ok && !f.Less(k.inc)) {
					// A late write of a deleted incarnation, before or after
					// GC reclaimed its record.
					if !errors.Is(err, ErrTombstoned) {
						rt.Fatalf("late put of deleted %v: %v", k, err)
					}
					return
				}
				if !hasKey(live, k) && belowDead(dead, k) && errors.Is(err, ErrTombstoned) {
					return // under a newer dead incarnation GC reclaimed (its floor)
				}
				if old, ok := live[k]; ok && string(old) != string(v) {
					if !errors.Is(err, ErrConflict) {
						rt.Fatalf("conflicting put %v: %v", k, err)
					}
					return
				}
				if errors.Is(err, api.ErrUnavailable) {
					return // raced a GC seal; retryable, nothing stored
				}
				if err != nil {
					rt.Fatalf("put %v: %v", k, err)
				}
				if _, ok := live[k]; !ok {
					live[k] = slices.Clone(v)
				}
			},
			"tombstone": func(rt *rapid.T) {
				var tasks []api.LocalDeleteTask
				for i := range rapid.IntRange(1, 4).Draw(rt, "tasks") {
					tasks = append(tasks, task(s, uint64(i), genKey.Draw(rt, "key"), incN(genInc.Draw(rt, "inc"))))
				}
				rs := s.BatchMarkDeleted(tasks)
				for i, tk := range tasks {
					k := objectKey{tk.Key, tk.Incarnation}
					got := rs[i].Outcome
					switch {
					case hasKey(live, k):
						if got != api.AckRemoved && !(got == api.AckAlreadyRemoved && dead[k]) {
							rt.Fatalf("task %v of a live record: %v", k, got)
						}
						dead[k] = true
					case dead[k]:
						if got != api.AckAlreadyRemoved && got != api.AckStaleVersion {
							rt.Fatalf("task %v of a deleted record: %v", k, got)
						}
					default:
						if got != api.AckStaleVersion {
							rt.Fatalf("task %v of an absent record: %v", k, got)
						}
						if f, ok := floor[k.key]; !ok || f.Less(k.inc) {
							floor[k.key] = k.inc
						}
					}
				}
				for k := range dead {
					delete(live, k)
				}
			},
			"get": func(rt *rapid.T) {
				checkGet(rt, s, live, objectKey{genKey.Draw(rt, "key"), incN(genInc.Draw(rt, "inc"))})
			},
			"gc": func(rt *rapid.T) {
				if rapid.Bool().Draw(rt, "faulty") {
					op := rapid.SampledFrom(faultOps).Draw(rt, "op")
					ffs.Inject(errorfs.Rule{Op: op, Err: syscall.EIO, Once: rapid.Bool().Draw(rt, "once")})
				}
				o := gco
				o.AgeAware = rapid.Bool().Draw(rt, "age-aware")
				o.DeletedRatio = rapid.SampledFrom([]float64{0.1, 0.25, 1}).Draw(rt, "ratio")
				newGCWorker(s, o, nil).pass()
				ffs.ClearRules()
			},
			"reopen": func(rt *rapid.T) {
				if err := s.Close(); err != nil {
					// A close after an injected failure may report it; the
					// directory is what matters.
					rt.Logf("close: %v", err)
				}
				var err error
				if s, err = OpenStore(dir, opts); err != nil {
					rt.Fatal(err)
				}
			},
			"": func(rt *rapid.T) { checkLiveRefs(rt, s, live) },
		})
	})
}

func hasKey(m map[objectKey][]byte, k objectKey) bool { _, ok := m[k]; return ok }

// belowDead reports whether a newer incarnation of k's key is dead.
func belowDead(dead map[objectKey]bool, k objectKey) bool {
	for d := range dead {
		if d.key == k.key && k.inc.Less(d.inc) {
			return true
		}
	}
	return false
}
