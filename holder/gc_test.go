package holder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
)

func TestGarbageCollectionUnlinksFullyDeadBucketWithoutReplacement(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		f.put(k, 1000)
	}
	f.kill("a", "b", "c", "d") // bucket 1 is fully dead
	nextBefore := f.s.nextID
	newGCWorker(f.s, testGCOptions(), nil).pass()

	if f.exists(bucketName(1)) || f.exists(metaName(1)) || f.exists(GCIntentFileName) {
		t.Fatalf("bucket 1 or the intent survived: %v", dirSnapshotNames(t, f.dir))
	}
	if got := f.bucketIDs(); !slices.Equal(got, []uint64{2}) || f.s.nextID != nextBefore {
		t.Fatalf("buckets %v, next id %d (was %d): a fully dead bucket needs no replacement", got, f.s.nextID, nextBefore)
	}
	st := f.s.GCStats()
	if st.Rounds != 1 || st.BucketsUnlinked != 1 || st.BucketsMerged != 0 || st.BytesCopied != 0 || st.BytesReclaimed <= 4000 {
		t.Fatalf("stats %+v", st)
	}
	f.check()
	f.reopen(StoreOptions{})
	f.check()
	if u := f.s.Usage(); u.DeadBytes != 0 || u.LiveObjects != 2 {
		t.Fatalf("usage after reopen %+v", u)
	}
}

func TestGarbageCollectionMergesPartiallyDeadBuckets(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for i, k := range []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "c1", "c2", "c3", "c4"} {
		f.put(k, 3000+i*100)
	}
	big := "big" // a value longer than the copy buffer, copied in chunks
	f.kill("a1", "a3", "b2", "b4")
	f.put(big, 3<<20/2) // bucket 4
	f.kill("c1")        // bucket 3: one of four dead (ratio below 0.25 by bytes)
	usedBefore := f.s.Usage().UsedBytes
	next := f.s.nextID
	newGCWorker(f.s, testGCOptions(), nil).pass()

	for _, n := range names(1, 2) {
		if f.exists(n) {
			t.Fatalf("source file %s survived the merge", n)
		}
	}
	tm := readMetaFile(t, f.dir, next)
	var keys []string
	for _, o := range tm.Objects {
		if o.Tombstoned {
			t.Fatalf("target carries a tombstone for %q", o.Key)
		}
		keys = append(keys, o.Key)
	}
	if !slices.Equal(keys, []string{"a2", "a4", "b1", "b3"}) {
		t.Fatalf("target %d holds %v, want the live records of buckets 1 and 2 in order", next, keys)
	}
	if !slices.Contains(f.bucketIDs(), 3) {
		t.Fatal("bucket 3 is below the ratio and must be left alone")
	}
	st := f.s.GCStats()
	wantCopied := int64(len(f.vals["a2"]) + len(f.vals["a4"]) + len(f.vals["b1"]) + len(f.vals["b3"]))
	if st.Rounds != 1 || st.BucketsMerged != 1 || st.BucketsUnlinked != 2 || st.BytesCopied != wantCopied {
		t.Fatalf("stats %+v, want %d bytes copied", st, wantCopied)
	}
	if u := f.s.Usage(); u.UsedBytes >= usedBefore || usedBefore-u.UsedBytes != st.BytesReclaimed {
		t.Fatalf("used %d → %d, stats say %d reclaimed", usedBefore, u.UsedBytes, st.BytesReclaimed)
	}
	f.check()
	f.reopen(StoreOptions{})
	f.check()
	if got := bucketOf(t, f.s, "a2", f.incs["a2"]); got != next {
		t.Fatalf("a2 lives in bucket %d after reopen, want target %d", got, next)
	}
}

func TestGarbageCollectionMergesAtMostEightSourcesWithinLimits(t *testing.T) {
	for _, c := range []struct {
		name                 string
		keys, buckets, alive int
		wantSources          int
	}{
		{"eight-source cap", 16, 10, 1, 8}, // 10 candidates whose live data fits: 8 go
		{"target key limit", 4, 12, 1, 4},  // 4 keys per bucket: the target holds 4 records
		{"target key limit 2", 4, 6, 2, 2}, // two live records each: two sources fill a target
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newGCFixture(t, StoreOptions{BucketKeysLimit: c.keys})
			var kill []string
			for b := range c.buckets {
				for i := range c.keys {
					k := fmt.Sprintf("b%02d-%02d", b, i)
					f.put(k, 300)
					if i >= c.alive {
						kill = append(kill, k)
					}
				}
			}
			f.kill(kill...)
			s := f.s
			s.mu.Lock()
			p := s.planRoundLocked(gcPolicy{ratio: 0.25}, nil)
			s.mu.Unlock()
			if len(p.sources) != c.wantSources || len(p.records) != c.wantSources*c.alive {
				t.Fatalf("plan has %d sources, %d records; want %d sources", len(p.sources), len(p.records), c.wantSources)
			}
			if err := newGCWorker(s, testGCOptions(), nil).runRound(p); err != nil {
				t.Fatal(err)
			}
			o := testGCOptions()
			o.AgeAware = false
			newGCWorker(s, o, nil).pass()
			for _, b := range s.BucketStats() {
				if b.LiveCount+b.DeadCount > c.keys {
					t.Fatalf("bucket %d exceeds the key limit: %+v", b.ID, b)
				}
			}
			if u := s.Usage(); u.DeadBytes != 0 {
				t.Fatalf("dead bytes left: %+v", u)
			}
			f.check()
			f.reopen(StoreOptions{BucketKeysLimit: c.keys})
			f.check()
		})
	}
}

func TestGarbageCollectionRespectsDeletedRatio(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		f.put(k, 1000)
	}
	f.kill("a") // ratio 0.25 exactly: collected
	o := testGCOptions()
	o.DeletedRatio = 0.5
	newGCWorker(f.s, o, nil).pass()
	if f.s.GCStats().Rounds != 0 || !f.exists(bucketName(1)) {
		t.Fatal("a bucket below the configured ratio was collected")
	}
	newGCWorker(f.s, testGCOptions(), nil).pass()
	if f.s.GCStats().Rounds != 1 || f.exists(bucketName(1)) {
		t.Fatalf("a bucket at the ratio was not collected: %+v", f.s.GCStats())
	}
	f.check()
}

func TestDiskHighWatermarkOverridesDeletedRatioThreshold(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	f.put("small", 500)
	for _, k := range []string{"x", "y", "z"} {
		f.put(k, 3000)
	}
	f.put("next", 100)
	f.kill("small") // ratio 500/9500, far below 0.25
	newGCWorker(f.s, testGCOptions(), nil).pass()
	if f.s.GCStats().Rounds != 0 {
		t.Fatal("collected below the ratio without disk pressure")
	}
	o := testGCOptions()
	o.Capacity = int64(float64(f.s.Usage().UsedBytes) / 0.95) // usage 95% ≥ high watermark
	newGCWorker(f.s, o, nil).pass()
	if u := f.s.Usage(); u.DeadBytes != 0 || f.s.GCStats().Rounds != 1 {
		t.Fatalf("pressure did not bypass the ratio: %+v %+v", u, f.s.GCStats())
	}
	f.check()
	f.reopen(StoreOptions{})
	f.check()
}

// fakeEvictor plays the master: it evicts everything it is offered except
// leased keys, and records what the store looked like when asked.
type fakeEvictor struct {
	s           *Store
	leased      map[string]bool
	calls       [][]api.ObjectRef
	deadAtCalls []int64
	err         error
}

func (e *fakeEvictor) EvictObjects(refs []api.ObjectRef) ([]api.ObjectRef, error) {
	e.calls = append(e.calls, refs)
	e.deadAtCalls = append(e.deadAtCalls, e.s.Usage().DeadBytes)
	if e.err != nil {
		return nil, e.err
	}
	var out []api.ObjectRef
	for _, r := range refs {
		if !e.leased[r.Key] {
			out = append(out, r)
		}
	}
	return out, nil
}

func TestEvictsLiveBucketsOnlyWhenNoDeadBytesRemain(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "c1", "c2", "c3", "c4"} {
		f.put(k, 4000)
	}
	f.kill("b1") // some dead bytes, ratio 0.25
	// Usage without the journals' copies of the values, which the pass
	// would give back first.
	if err := f.s.CompactJournals(); err != nil {
		t.Fatal(err)
	}
	o := testGCOptions()
	o.Capacity = int64(float64(f.s.Usage().UsedBytes) / 0.99)
	ev := &fakeEvictor{s: f.s, leased: map[string]bool{"a2": true}}

	// Without an evictor the dead bytes go and nothing live is touched.
	w := newGCWorker(f.s, o, nil)
	w.pass()
	if u := f.s.Usage(); u.DeadBytes != 0 || u.LiveObjects != 11 {
		t.Fatalf("usage %+v", u)
	}
	if st := f.s.GCStats(); !strings.Contains(st.LastError, "no evictor") {
		t.Fatalf("no-evictor pressure not reported: %+v", st)
	}
	f.check()

	// Still above the low watermark: the same worker keeps reclaiming
	// (hysteresis), dead bytes first, then eviction.
	f.kill("c4")
	w.ev = ev
	w.pass()
	if len(ev.calls) == 0 {
		t.Fatalf("the master was never asked to evict: usage %+v cap %d stats %+v reclaiming %v", f.s.Usage(), o.Capacity, f.s.GCStats(), w.reclaiming)
	}
	for i, d := range ev.deadAtCalls {
		if d != 0 {
			t.Fatalf("eviction %d asked while %d dead bytes remained", i, d)
		}
	}
	var first []string
	for _, r := range ev.calls[0] {
		first = append(first, r.Key)
	}
	if !slices.Equal(first, []string{"a1", "a2", "a3", "a4"}) {
		t.Fatalf("first eviction offered %v, want the oldest bucket's live records", first)
	}
	for _, refs := range ev.calls {
		for _, r := range refs {
			if !ev.leased[r.Key] {
				f.dead[r.Key] = true
			}
		}
	}
	if u := f.s.Usage(); float64(u.UsedBytes) > o.LowWatermark*float64(o.Capacity) || u.DeadBytes != 0 {
		t.Fatalf("usage %d of capacity %d after reclaim (%+v)", u.UsedBytes, o.Capacity, u)
	}
	if st := f.s.GCStats(); st.BucketsEvicted == 0 || st.ObjectsEvicted != int64(len(f.dead)-2) {
		t.Fatalf("stats %+v, dead %v", st, f.dead)
	}
	mustGet(t, f.s, "a2", f.incs["a2"], f.vals["a2"]) // leased: the master refused
	f.check()
	f.reopen(StoreOptions{})
	f.check()
}

func TestEvictionRefusedByMasterTombstonesNothing(t *testing.T) {
	f, o := overWatermark(t)
	ev := &fakeEvictor{s: f.s, err: api.ErrUnavailable}
	newGCWorker(f.s, o, ev).pass()
	if u := f.s.Usage(); u.LiveObjects != 5 || len(ev.calls) != 1 {
		t.Fatalf("usage %+v after %d calls", u, len(ev.calls))
	}
	if st := f.s.GCStats(); st.LastError == "" || st.BucketsEvicted != 0 {
		t.Fatalf("stats %+v", st)
	}
	f.check()
}

// mergeFixture: buckets 1 and 2 half dead, bucket 3 open; a round merges
// 1 and 2 into a target. victim is live in bucket 1.
func mergeFixture(t *testing.T, opts StoreOptions) *gcFixture {
	f := newGCFixture(t, opts)
	for _, k := range []string{"a1", "a2", "victim", "a4", "b1", "b2", "b3", "b4", "c1"} {
		f.put(k, 2000)
	}
	f.kill("a1", "a2", "b1", "b2")
	return f
}

func ids(s *Store) []uint64 {
	var out []uint64
	for _, b := range s.BucketStats() {
		out = append(out, b.ID)
	}
	return out
}

func TestCommittedCleanupRetriedWithoutRestart(t *testing.T) {
	ffs := errorfs.NewFaulty(fsys.OS{})
	f := mergeFixture(t, StoreOptions{FS: ffs})
	target := f.s.nextID
	w := newGCWorker(f.s, testGCOptions(), nil)

	ffs.Inject(errorfs.Rule{Op: errorfs.OpRemove, Pattern: "*.bucket", Err: syscall.EIO})
	w.pass()
	st := f.s.GCStats()
	if !st.CleanupPending || !strings.Contains(st.LastError, "unlink") || st.Rounds != 1 {
		t.Fatalf("stats after a failed unlink: %+v", st)
	}
	if in := readIntentFile(t, f.dir); in == nil || in.State != gcCommitted {
		t.Fatalf("intent %s, want COMMITTED kept until cleanup completes", describe(in))
	}
	if !f.exists(bucketName(1)) {
		t.Fatal("the injected failure did not keep the source")
	}
	// The target is authoritative meanwhile: reads and tombstones go there.
	if got := bucketOf(t, f.s, "victim", f.incs["victim"]); got != target {
		t.Fatalf("victim in bucket %d, want target %d", got, target)
	}
	f.check()
	// A new candidate appears; no new round starts while cleanup is pending.
	f.kill("c1")
	ffs.ClearRules()
	ffs.Inject(errorfs.Rule{Op: errorfs.OpSyncDir, Err: syscall.EIO, Once: true})
	w.pass()
	if st := f.s.GCStats(); !st.CleanupPending || st.Rounds != 1 || !strings.Contains(st.LastError, "fsync") {
		t.Fatalf("stats after a failed dir fsync: %+v", st)
	}
	if !slices.Contains(f.bucketIDs(), 3) {
		t.Fatal("a new round ran while the committed cleanup was unfinished")
	}

	ffs.ClearRules()
	w.pass()
	st = f.s.GCStats()
	if st.CleanupPending || st.BucketsUnlinked < 2 {
		t.Fatalf("stats after the retry: %+v", st)
	}
	for _, n := range append(names(1, 2), GCIntentFileName) {
		if f.exists(n) {
			t.Fatalf("%s survived the retried cleanup", n)
		}
	}
	f.check()
	f.reopen(StoreOptions{})
	if f.s.OpenReport().GCRecovery != "" {
		t.Fatalf("restart had GC work left: %s", f.s.OpenReport().GCRecovery)
	}
	f.check()
}

func dirSnapshotNames(t *testing.T, dir string) []string {
	var out []string
	for n := range testutil.DirContents(t, dir) {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// The age-aware default lets a young bucket at the ratio wait (its data is
// likely hot and still dying) while an old one at the same ratio goes; at
// twice the ratio, or under disk pressure, the young one goes too. Greedy
// takes both at once.
func TestAgeAwarePolicyDefersYoungBucketsOnly(t *testing.T) {
	setup := func() *gcFixture {
		f := newGCFixture(t, StoreOptions{})
		for b := range 5 {
			for i := range 4 {
				f.put(string(rune('a'+b))+string(rune('0'+i)), 1000)
			}
		}
		f.put("open", 1000)
		f.kill("a0", "d0") // bucket 1 (oldest) and bucket 4 (young), both at 0.25
		return f
	}
	f := setup()
	newGCWorker(f.s, testGCOptions(), nil).pass()
	if got := f.bucketIDs(); slices.Contains(got, 1) || !slices.Contains(got, 4) {
		t.Fatalf("age-aware: buckets %v; want the old one merged, the young one kept", got)
	}
	f.kill("d1") // the young bucket reaches 2r
	newGCWorker(f.s, testGCOptions(), nil).pass()
	if slices.Contains(f.bucketIDs(), 4) {
		t.Fatal("age-aware: a young bucket at twice the ratio was kept")
	}
	f.check()

	g := setup()
	o := testGCOptions()
	o.Capacity = int64(float64(g.s.Usage().UsedBytes) / 0.95)
	newGCWorker(g.s, o, nil).pass()
	if u := g.s.Usage(); u.DeadBytes != 0 {
		t.Fatalf("age-aware under pressure left dead bytes: %+v", u)
	}
	g.check()

	h := setup()
	o = testGCOptions()
	o.AgeAware = false
	newGCWorker(h.s, o, nil).pass()
	if u := h.s.Usage(); u.DeadBytes != 0 {
		t.Fatalf("greedy left dead bytes: %+v", u)
	}
	h.check()
}

// A tombstone that hides a live duplicate in another bucket (only legacy
// or crash-made directories have duplicates) must not be reclaimed alone:
// the round takes the duplicate's bucket too, or a restart would find the
// duplicate live again.
func TestGarbageCollectionNeverDropsATombstoneThatShadowsADuplicate(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	f.put("x", 1000)
	for _, k := range []string{"p", "q", "r"} {
		f.put(k, 5000) // bucket 1 stays below the ratio with x shadowed
	}
	f.s.Close()
	// Bucket 2 holds a second copy of x: it wins (higher id), bucket 1's
	// copy is shadowed.
	if err := os.WriteFile(filepath.Join(f.dir, bucketName(2)), f.vals["x"], 0o644); err != nil {
		t.Fatal(err)
	}
	m := &BucketMetadata{V: metaVersionCurrent, BucketID: 2, DataSize: int64(len(f.vals["x"])), Objects: []ObjectMeta{{
		Key: "x", Tenant: "t", Incarnation: f.incs["x"], Size: int64(len(f.vals["x"])), CRC32C: crc32c(f.vals["x"])}}}
	data, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, metaName(2)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.reopen(StoreOptions{})
	if f.s.OpenReport().ShadowedRecords != 1 || bucketOf(t, f.s, "x", f.incs["x"]) != 2 {
		t.Fatalf("setup: %+v", f.s.OpenReport())
	}
	f.kill("x") // lands on bucket 2, which is now fully dead
	o := testGCOptions()
	o.AgeAware = false
	newGCWorker(f.s, o, nil).pass()
	if f.exists(metaName(1)) || f.exists(metaName(2)) {
		t.Fatalf("buckets %v: the shadowed copy's bucket must go with the tombstone", f.bucketIDs())
	}
	f.check()
	f.reopen(StoreOptions{})
	f.check()
}

// A legacy (version-0) bucket is a GC source like any other: its live
// records move to a current-version target under incarnation zero.
func TestGarbageCollectionMergesLegacyBucket(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "legacy-v0"))
	s := openT(t, dir, StoreOptions{})
	zero := api.ObjectIncarnation{}
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, legacyFixtureKeys[0], zero)}), api.AckRemoved)
	o := testGCOptions()
	o.AgeAware = false
	newGCWorker(s, o, nil).pass()
	s.Close()
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if s.OpenReport().LegacyBuckets != 0 || slices.Contains(ids(s), 1) {
		t.Fatalf("legacy bucket not replaced: %+v %v", s.OpenReport(), ids(s))
	}
	if _, err := s.Get(legacyFixtureKeys[0], zero); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted legacy record: %v", err)
	}
	for _, k := range legacyFixtureKeys[1:] {
		mustGet(t, s, k, zero, legacyFixtureValue(k))
	}
}

// partialEvictor drops the first ref, then fails: the master dropped that
// replica, so the holder must tombstone it anyway.
type partialEvictor struct{}

func (partialEvictor) EvictObjects(refs []api.ObjectRef) ([]api.ObjectRef, error) {
	return refs[:1], api.ErrUnavailable
}

func TestEvictionPartialAnswerTombstonesWhatTheMasterDropped(t *testing.T) {
	f, o := overWatermark(t)
	newGCWorker(f.s, o, partialEvictor{}).pass()
	f.dead["a"] = true
	if st := f.s.GCStats(); st.ObjectsEvicted != 1 || st.LastError == "" {
		t.Fatalf("stats %+v", st)
	}
	f.check()
}

// overWatermark is a store of five live 4000-byte records and GC options
// whose capacity puts it at 95% use, over the high watermark: a pass must
// evict.
func overWatermark(t *testing.T) (*gcFixture, GCOptions) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		f.put(k, 4000)
	}
	o := testGCOptions()
	o.Capacity = int64(float64(f.s.Usage().UsedBytes) / 0.95)
	return f, o
}
