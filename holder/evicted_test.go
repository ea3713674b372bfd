package holder

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sexton/api"
	"sexton/internal/msgpackscan"
)

// deadRecord finds key@inc among recs; ok false when it is not there.
func deadRecord(recs []api.HolderRecord, key string, inc api.ObjectIncarnation) (api.HolderRecord, bool) {
	for _, r := range recs {
		if r.Key == key && r.Incarnation == inc {
			return r, true
		}
	}
	return api.HolderRecord{}, false
}

// wantDead asserts key@inc is reported dead, evicted or removed.
func wantDead(t *testing.T, s *Store, when, key string, inc api.ObjectIncarnation, evicted bool) {
	t.Helper()
	r, ok := deadRecord(s.Records(), key, inc)
	if !ok || !r.Tombstoned || r.Evicted != evicted {
		t.Fatalf("%s: %q %s reported %+v (present %v), want tombstoned with evicted=%v", when, key, inc, r, ok, evicted)
	}
}

// An eviction is recorded as one in the tombstone's own metadata write:
// Records tells it from a removal while the tombstone is in a bucket,
// after a reopen, after GC reclaimed it into the floor, and after another
// reopen. Only the bucket holding an evicted record is written as
// version 2, and the floor only while an entry carries the mark; removed
// records read as removed throughout.
func TestEvictedMarkIsDurableAndToldFromRemoval(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	mustPutEach(t, s, 300, "gone", "evicted", "stays", "removed")
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "gone", incN(1)), task(s, 2, "removed", incN(4))}), api.AckRemoved, api.AckRemoved)
	wantOutcomes(t, s.BatchMarkEvicted([]api.LocalDeleteTask{task(s, 3, "evicted", incN(2))}), api.AckRemoved)
	// An eviction of a record already removed keeps it removed.
	wantOutcomes(t, s.BatchMarkEvicted([]api.LocalDeleteTask{task(s, 4, "gone", incN(1))}), api.AckAlreadyRemoved)

	check := func(when string) {
		t.Helper()
		wantDead(t, s, when, "evicted", incN(2), true)
		wantDead(t, s, when, "gone", incN(1), false)
		wantDead(t, s, when, "removed", incN(4), false)
		mustGet(t, s, "stays", incN(3), valueOf("stays", 300))
		wantRefused(t, s, "evicted", incN(2))
	}
	check("after the eviction")
	if m := readMetaFile(t, dir, 1); m.V != metaVersionEvicted || !m.Objects[1].Evicted || m.Objects[0].Evicted {
		t.Fatalf("bucket 1 on disk: %+v, want version 2 with only the evicted record marked", m)
	}
	if m := readMetaFile(t, dir, 2); m.V != metaVersionCurrent {
		t.Fatalf("bucket 2 (no evicted record) written as version %d, want 1", m.V)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	check("after reopening")
	newGCWorker(s, testGCOptions(), nil).pass()
	if u := s.Usage(); u.DeadBytes != 0 {
		t.Fatalf("GC left dead bytes: %+v", u)
	}
	check("after GC reclaimed the tombstones")
	ff := readFloorFile(t, dir)
	if ff.V != floorVersionEvicted {
		t.Fatalf("floor file version %d, want %d while an entry is evicted", ff.V, floorVersionEvicted)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	defer s.Close()
	check("after reopening the reclaimed directory")
}

func readFloorFile(t *testing.T, dir string) *floorFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FloorFileName))
	if err != nil {
		t.Fatal(err)
	}
	var ff floorFile
	if err := decodeChecked(b, "floor", MaxFloorFileSize, msgpackscan.Limits{MaxItems: maxFloorEntries}, &ff); err != nil {
		t.Fatal(err)
	}
	return &ff
}

// A directory of the format before the evicted mark (version-1 metadata
// and a version-1 floor, which are byte-identical to what this build
// writes without an eviction) opens with every tombstone read as removed:
// the safe reading, never an eviction.
func TestOldFormatTombstonesReadAsRemoved(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	mustPutEach(t, s, 100, "a", "b", "c", "d")
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "a", incN(1)), task(s, 2, "c", incN(3))}), api.AckRemoved, api.AckRemoved)
	s.Close()
	// Bucket 2 is rewritten in the old shape, which has no evicted key at
	// all; bucket 1 goes to the floor through GC first.
	old := readMetaFile(t, dir, 2)
	// An object record of the old shape: no evicted key.
	type oldObject struct {
		Key         string                `msgpack:"key"`
		Tenant      string                `msgpack:"tenant"`
		Incarnation api.ObjectIncarnation `msgpack:"inc"`
		Offset      int64                 `msgpack:"off"`
		Size        int64                 `msgpack:"size"`
		CRC32C      uint32                `msgpack:"crc"`
		Tombstoned  bool                  `msgpack:"tomb"`
	}
	b, err := sealChecksum(&struct {
		V        uint32      `msgpack:"v"`
		BucketID uint64      `msgpack:"id"`
		DataSize int64       `msgpack:"data_size"`
		Objects  []oldObject `msgpack:"objects"`
		Checksum uint32      `msgpack:"checksum"`
	}{V: 1, BucketID: 2, DataSize: old.DataSize, Objects: []oldObject{
		{old.Objects[0].Key, old.Objects[0].Tenant, old.Objects[0].Incarnation, old.Objects[0].Offset, old.Objects[0].Size, old.Objects[0].CRC32C, true},
		{old.Objects[1].Key, old.Objects[1].Tenant, old.Objects[1].Incarnation, old.Objects[1].Offset, old.Objects[1].Size, old.Objects[1].CRC32C, false},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := encodeMeta(old); !bytes.Equal(now, b) {
		t.Fatal("this build writes a bucket without evictions differently from the old shape")
	}
	if err := os.WriteFile(filepath.Join(dir, metaName(2)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	newGCWorker(s, testGCOptions(), nil).pass() // a → the floor (c's bucket is half live)
	s.Close()
	if ff := readFloorFile(t, dir); ff.V != floorVersion {
		t.Fatalf("floor without evictions written as version %d", ff.V)
	}
	s = openT(t, dir, StoreOptions{BucketKeysLimit: 2})
	defer s.Close()
	wantDead(t, s, "old floor", "a", incN(1), false)
	wantDead(t, s, "old metadata", "c", incN(3), false)
	mustGet(t, s, "d", incN(4), valueOf("d", 100))
}

// The mark is versioned so no build misreads it: a version-1 file that
// carries it, a mark on a live record, and a version this build does not
// know are refused, each naming the problem.
func TestEvictedMarkFailsClosed(t *testing.T) {
	m := &BucketMetadata{BucketID: 3, DataSize: 10, Objects: []ObjectMeta{
		{Key: "k", Incarnation: incN(1), Size: 10, Tombstoned: true, Evicted: true},
	}}
	good, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeMeta("x.meta", 3, good); err != nil || got.V != metaVersionEvicted || !got.Objects[0].Evicted {
		t.Fatalf("evicted metadata: %+v %v", got, err)
	}
	seal := func(v uint32, tomb bool) []byte {
		c := *m
		c.V = v
		c.Objects = []ObjectMeta{m.Objects[0]}
		c.Objects[0].Tombstoned = tomb
		b, err := sealChecksum(&c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"v1 with the mark":   {seal(metaVersionCurrent, true), ErrCorrupt},
		"v0 with the mark":   {seal(metaVersionLegacy, true), ErrCorrupt},
		"mark on a live one": {seal(metaVersionEvicted, false), ErrCorrupt},
		"unknown version":    {seal(metaVersionEvicted+1, true), ErrUnknownVersion},
	} {
		if _, err := decodeMeta("x.meta", 3, tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	floor := func(v uint32) []byte {
		b, err := sealChecksum(&floorFile{V: v, Floors: []floorFileItem{{Key: "k", Inc: incN(1), At: 1, Ev: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if fl, err := decodeFloors("floor", floor(floorVersionEvicted)); err != nil || !fl["k"].evicted {
		t.Fatalf("evicted floor: %+v %v", fl, err)
	}
	if _, err := decodeFloors("floor", floor(floorVersion)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("v1 floor with the mark: %v, want ErrCorrupt", err)
	}
	if _, err := decodeFloors("floor", floor(floorVersionEvicted+1)); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("unknown floor version: %v, want ErrUnknownVersion", err)
	}
}

// A removal outweighs an eviction of the same incarnation: in the index
// (two tombstones of one record in two buckets) and in the floor.
func TestRemovalOutweighsEviction(t *testing.T) {
	idx := newIndex()
	k := objectKey{"k", incN(1)}
	idx.markDead(k, 1, true)
	if _, ev := idx.evicted[k]; !ev {
		t.Fatal("a lone eviction is not marked evicted")
	}
	idx.markDead(k, 2, false)
	idx.markDead(k, 3, true)
	if _, ev := idx.evicted[k]; ev {
		t.Fatal("an eviction after a removal reads as evicted")
	}

	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	if err := s.raiseFloors([]deadKey{{objectKey{"f", incN(5)}, true}}, tombstoneFloorPoints); err != nil {
		t.Fatal(err)
	}
	wantDead(t, s, "evicted floor", "f", incN(5), true)
	if err := s.raiseFloors([]deadKey{{objectKey{"f", incN(5)}, false}}, tombstoneFloorPoints); err != nil {
		t.Fatal(err)
	}
	wantDead(t, s, "removed at the same incarnation", "f", incN(5), false)
	if err := s.raiseFloors([]deadKey{{objectKey{"f", incN(5)}, true}}, tombstoneFloorPoints); err != nil {
		t.Fatal(err)
	}
	wantDead(t, s, "evicted again", "f", incN(5), false)
}

// The GC's eviction path marks what the master agreed to drop as evicted,
// and what was removed stays removed.
func TestGCEvictionMarksRecordsEvicted(t *testing.T) {
	f := newGCFixture(t, StoreOptions{})
	for _, k := range []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"} {
		f.put(k, 4000)
	}
	f.kill("b1")
	// Usage without the journals' copies of the values, which the pass
	// would give back first.
	if err := f.s.CompactJournals(); err != nil {
		t.Fatal(err)
	}
	o := testGCOptions()
	o.Capacity = int64(float64(f.s.Usage().UsedBytes) / 0.99)
	ev := &fakeEvictor{s: f.s, leased: map[string]bool{"a2": true}}
	newGCWorker(f.s, o, ev).pass()
	if len(ev.calls) == 0 {
		t.Fatalf("nothing was offered for eviction: %+v", f.s.GCStats())
	}
	wantDead(t, f.s, "after eviction", "a1", f.incs["a1"], true)
	wantDead(t, f.s, "after eviction", "b1", f.incs["b1"], false)
	mustGet(t, f.s, "a2", f.incs["a2"], f.vals["a2"])
	f.reopen(StoreOptions{})
	wantDead(t, f.s, "after reopening", "a1", f.incs["a1"], true)
	wantDead(t, f.s, "after reopening", "b1", f.incs["b1"], false)
}
