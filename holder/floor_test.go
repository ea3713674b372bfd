package holder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
)

// wantRefused asserts a Put of (key, inc) is refused as a tombstoned
// incarnation (GRANT_REFUSED on the wire) and leaves nothing live.
func wantRefused(t *testing.T, s *Store, key string, inc api.ObjectIncarnation) {
	t.Helper()
	err := s.Put(key, "t", inc, []byte("late bytes"))
	if !errors.Is(err, ErrTombstoned) || api.CodeOf(storeError(err)) != api.CodeGrantRefused {
		t.Fatalf("late Put(%q, %s) = %v, want a tombstoned refusal (GRANT_REFUSED)", key, inc, err)
	}
	if _, err := s.Get(key, inc); !errors.Is(err, ErrNotFound) {
		t.Fatalf("%q %s is live after a refused write: %v", key, inc, err)
	}
}

// Fault 5a: GC reclaims a tombstoned record (and with it the tombstone in
// the metadata); a late write of that incarnation, or an older one, must
// still be refused, also after a restart. A newer incarnation is not.
func TestLateWriteAfterGCReclaimedTombstoneIsRefused(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a", "b", "c", "d"} {
		f.put(k, 1000)
	}
	f.put("e", 1000) // bucket 2: bucket 1 is full and not the open bucket
	f.kill("a", "b", "c", "d")
	newGCWorker(f.s, testGCOptions(), nil).pass()
	if f.exists(metaName(1)) {
		t.Fatal("bucket 1 was not reclaimed")
	}
	f.s.mu.Lock()
	_, dead := f.s.idx.dead[objectKey{"a", f.incs["a"]}]
	f.s.mu.Unlock()
	if dead {
		t.Fatal("the reclaimed tombstone is still in the index: the test would not exercise the floor")
	}
	wantRefused(t, f.s, "a", f.incs["a"])
	older := api.ObjectIncarnation{High: testCluster, Low: f.incs["b"].Low - 1}
	wantRefused(t, f.s, "b", older)
	// A newer incarnation of the key is a new put: accepted.
	f.n++
	mustPut(t, f.s, "a", incN(f.n), []byte("new"))
	f.reopen(StoreOptions{})
	wantRefused(t, f.s, "c", f.incs["c"])
	mustGet(t, f.s, "a", incN(f.n), []byte("new"))
	if n := f.s.FloorEntries(); n != 4 {
		t.Fatalf("floor holds %d keys, want 4", n)
	}
}

// A task whose record is absent (its write has not arrived yet, or GC
// reclaimed it) raises the floor before it answers StaleVersion: the write
// that arrives later is refused, also after a restart.
func TestTombstoneOfAbsentRecordRefusesLaterWrite(t *testing.T) {
	s, dir := openTemp(t)
	mustPut(t, s, "k", incN(3), []byte("older, complete"))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(5))}), api.AckStaleVersion)
	wantRefused(t, s, "k", incN(5))
	wantRefused(t, s, "k", incN(4))
	// The older complete incarnation stays live: the floor refuses writes
	// below it but hides only the incarnation it recorded (a revoked put
	// of incarnation 5 must not take the key's current value with it).
	mustGet(t, s, "k", incN(3), []byte("older, complete"))
	s.Close()
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	wantRefused(t, s, "k", incN(5))
	mustGet(t, s, "k", incN(3), []byte("older, complete"))
	mustPut(t, s, "k", incN(6), []byte("newer"))
}

// A live record exactly at its key's floor (only a crash-made or foreign
// directory can hold one) loads dead; one below the floor loads live.
func TestLoadHidesRecordAtFloorOnly(t *testing.T) {
	s, dir := openTemp(t)
	mustPut(t, s, "k", incN(3), []byte("below"))
	mustPut(t, s, "j", incN(4), []byte("at"))
	s.Close()
	data, err := encodeFloors(map[string]floorEntry{"k": {inc: incN(5), at: time.Now().UnixNano()}, "j": {inc: incN(4), at: time.Now().UnixNano()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FloorFileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	mustGet(t, s, "k", incN(3), []byte("below"))
	if _, err := s.Get("j", incN(4)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("record at its floor is live: %v", err)
	}
	if refs := s.LiveRefs(); len(refs) != 1 || refs[0].Key != "k" {
		t.Fatalf("live refs %v", refs)
	}
	rep, err := Inspect(dir)
	if err != nil || rep.FloorEntries != 2 || rep.LiveObjects != 1 {
		t.Fatalf("inspect: floor %d live %d err %v", rep.FloorEntries, rep.LiveObjects, err)
	}
}

// An entry is kept for the retention and dropped by the first floor change
// after it; a corrupt floor file fails the open closed.
func TestFloorRetentionAndCorruption(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	opts := StoreOptions{Now: clock}
	s := openT(t, dir, opts)
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "old", incN(5))}), api.AckStaleVersion)
	now = now.Add(DefaultFloorRetention) // not past it yet
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 2, "mid", incN(6))}), api.AckStaleVersion)
	if n := s.FloorEntries(); n != 2 {
		t.Fatalf("floor holds %d keys before the retention passed, want 2", n)
	}
	wantRefused(t, s, "old", incN(5))
	now = now.Add(time.Second)
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 3, "new", incN(7))}), api.AckStaleVersion)
	if n := s.FloorEntries(); n != 2 {
		t.Fatalf("floor holds %d keys after the retention of one passed, want 2", n)
	}
	s.Close()
	s = openT(t, dir, opts)
	if n := s.FloorEntries(); n != 2 {
		t.Fatalf("reopened floor holds %d keys, want 2", n)
	}
	wantRefused(t, s, "mid", incN(6))
	s.Close()

	if _, err := OpenStore(dir, StoreOptions{FloorRetention: time.Minute}); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("retention shorter than a grant's life: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FloorFileName))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, FloorFileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.DirContents(t, dir)
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), FloorFileName) {
		t.Fatalf("open with a corrupt floor: %v", err)
	}
	sameSnapshot(t, before, testutil.DirContents(t, dir))
}

// A floor that cannot be persisted leaves the task retryable (not acked)
// and changes nothing in memory.
func TestFloorPersistFailureIsRetryable(t *testing.T) {
	opts, ff := faultyOpts(0)
	s := openT(t, t.TempDir(), opts)
	defer s.Close()
	ff.Inject(errorfs.Rule{Op: errorfs.OpSyncDir, Err: syscall.EIO})
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(5))}), api.AckRetryableFailure)
	ff.ClearRules()
	if n := s.FloorEntries(); n != 0 {
		t.Fatalf("a failed floor persistence changed memory: %d keys", n)
	}
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(5))}), api.AckStaleVersion)
	wantRefused(t, s, "k", incN(5))
}

// Tombstoned, what a holder reports to the master's ghost check, names a
// ref tombstoned by record, or absent and at or below its key's floor;
// never a live record (not even one below a floor a revoked newer put
// raised) and never a ref the store has no trace of.
func TestTombstonedNamesOnlyRefsWithEvidence(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	mustPut(t, s, "live", incN(1), []byte("live"))
	mustPut(t, s, "dead", incN(2), []byte("dead"))
	mustPut(t, s, "below", incN(3), []byte("below a revoked put's floor"))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "dead", incN(2)), task(s, 2, "below", incN(9)), task(s, 3, "floor", incN(8))}),
		api.AckRemoved, api.AckStaleVersion, api.AckStaleVersion)
	refs := []api.ObjectRef{
		{Key: "live", Incarnation: incN(1)},
		{Key: "dead", Incarnation: incN(2)},
		{Key: "below", Incarnation: incN(3)},
		{Key: "floor", Incarnation: incN(7)},
		{Key: "floor", Incarnation: incN(8)},
		{Key: "absent", Incarnation: incN(4)},
		{Key: "floor", Incarnation: incN(10)},
	}
	got := s.Tombstoned(refs)
	want := []api.ObjectRef{refs[1], refs[3], refs[4]}
	if len(got) != len(want) {
		t.Fatalf("Tombstoned = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Tombstoned = %+v, want %+v", got, want)
		}
	}
}
