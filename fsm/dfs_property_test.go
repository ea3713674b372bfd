package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/internal/testutil"
)

// Random DFS put / overwrite / revoke / remove / evict / file-op / lost
// sequences, applied to two FSMs: both write identical snapshot bytes after
// every step, a restore of either writes the same bytes, and the live
// objects' DFS descriptors never overlap.
func TestDFSRandomSequencesDeterministicAndDisjoint(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		for _, kind := range []string{dfsalloc.KindShard, dfsalloc.KindBucket} {
			t.Run(fmt.Sprintf("%s/%d", kind, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 99))
				a, b := newHarness(t, 1000), newHarness(t, 1000)
				both := func(mk func(h *harness) Command) {
					ra := a.apply(mk(a))
					rb := b.apply(mk(b))
					if !reflect.DeepEqual(ra, rb) {
						t.Fatalf("results differ: %v vs %v", ra, rb)
					}
				}
				both(func(h *harness) Command {
					return &EpochBegin{Term: 1, LeaderID: "m1", ClusterID: 5, Now: h.now}
				})
				s := dfsSettings(kind)
				s.ShardCapacity, s.BucketCapacity, s.MaxBucketCount = 64<<10, 32<<10, 6
				s.HighWatermark, s.LowWatermark = 0.6, 0.3
				both(func(h *harness) Command { return &DFSConfigure{Settings: s, Now: h.now} })
				pending := map[string]api.ObjectIncarnation{}
				for step := 0; step < 300; step++ {
					key := fmt.Sprintf("k%d", rng.IntN(12))
					switch op := rng.IntN(10); {
					case op < 4:
						size := int64(rng.IntN(9000))
						var res *PutStartResult
						ra := a.apply(&PutStart{PutStartItem: PutStartItem{Key: key, Size: size, Replicas: dfsReplica()}, Now: a.now}).(*PutStartResult)
						res = b.apply(&PutStart{PutStartItem: PutStartItem{Key: key, Size: size, Replicas: dfsReplica()}, Now: b.now}).(*PutStartResult)
						if !reflect.DeepEqual(ra, res) {
							t.Fatalf("put start differs")
						}
						if res.Err == nil {
							pending[key] = res.Incarnation
						}
					case op < 6:
						if inc, ok := pending[key]; ok {
							delete(pending, key)
							both(func(h *harness) Command { return &PutEnd{Key: key, Incarnation: inc, Now: h.now} })
						}
					case op < 7:
						if inc, ok := pending[key]; ok {
							delete(pending, key)
							both(func(h *harness) Command { return &PutRevoke{Key: key, Incarnation: inc, Now: h.now} })
						}
					case op < 8:
						both(func(h *harness) Command { return &Remove{Keys: []string{key}, Now: h.now} })
					case op < 9:
						plan, _ := a.f.DFSPlanEviction(a.now, func(k string) bool { return k == "k0" })
						both(func(h *harness) Command { return &DFSEvict{Plan: plan, Now: h.now} })
					default:
						for _, fo := range a.f.DFSPendingFileOps() {
							ok := rng.IntN(4) != 0
							both(func(h *harness) Command {
								return &DFSFileOp{Kind: fo.Kind, Unit: fo.Unit, OK: ok, Now: h.now}
							})
						}
						if st, _ := a.f.DFSStats(); rng.IntN(20) == 0 && len(st.Units) > 0 {
							u := st.Units[rng.IntN(len(st.Units))].Unit
							both(func(h *harness) Command { return &DFSMarkLost{Unit: u, Now: h.now} })
						}
					}
					sa, sb := snapshotBytes(t, a.f), snapshotBytes(t, b.f)
					if !bytes.Equal(sa, sb) {
						t.Fatalf("step %d: snapshots differ", step)
					}
					checkDisjoint(t, a.f)
				}
				restored(t, a.f)
				if st, _ := a.f.DFSStats(); seed == 1 {
					t.Logf("%s: evicted %d, aborted %d, lost %d, entries %d, units %d", kind, st.Evicted, st.Aborted, st.Lost, st.LiveEntries, len(st.Units))
				}
			})
		}
	}
}

// checkDisjoint fails if two incarnations' DFS ranges overlap.
func checkDisjoint(t *testing.T, f *FSM) {
	t.Helper()
	var rs []testutil.FileRange
	f.mu.RLock()
	for _, k := range f.st.objects.keys() {
		e := f.st.objects.get(k)
		for _, o := range []*object{e.complete, e.pending} {
			for _, d := range dfsReplicasOf(o) {
				rs = append(rs, testutil.FileRange{Who: k, Path: d.Path, Off: d.Offset, Size: d.AlignedSize})
			}
		}
	}
	f.mu.RUnlock()
	if a, b, ok := testutil.Overlap(rs); ok {
		t.Fatalf("%s and %s overlap in %s at %d", a.Who, b.Who, b.Path, b.Off)
	}
}
