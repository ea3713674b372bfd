package dfsalloc

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// bucketState is a small bucket allocator state with a sealed, an open and
// a deleting bucket, committed and pending entries and a tombstone.
func bucketState(t testing.TB) Allocator {
	a := mustNew(t, bucketConfig(4*unit4k, 4))
	ds := mustAlloc(t, a, t0, req("a", unit4k), req("b", 3*unit4k), req("c", 2*unit4k), req("d", 1))
	must(t, a.Commit("a", ds[0], t0))
	must(t, a.Commit("b", ds[1], t0))
	must(t, a.Free("c", ds[2], t0+sec))
	x := mustAlloc(t, a, t0+2*sec, req("x", 4*unit4k))[0]
	must(t, a.Commit("x", x, t0+2*sec))
	must(t, a.ConfirmFileCreated(1))
	if _, err := a.MarkLost(x.UnitID, t0+3*sec); err != nil {
		t.Fatal(err)
	}
	return a
}

func shardState(t testing.TB) Allocator {
	a := mustNew(t, shardConfig(4, 16*unit4k))
	ds := mustAlloc(t, a, t0, req("a", 1), req("b", 5000), req("c", 3), req("d", 0), req("e", 9000))
	must(t, a.Commit("a", ds[0], t0))
	must(t, a.Free("b", ds[1], t0+sec))
	must(t, a.Free("e", ds[4], t0+2*sec))
	must(t, a.ConfirmFileCreated(ds[0].UnitID))
	return a
}

func TestRecordsRoundTripByteIdentical(t *testing.T) {
	for name, a := range map[string]Allocator{"bucket": bucketState(t), "shard": shardState(t)} {
		t.Run(name, func(t *testing.T) {
			b := roundTrip(t, a)
			if a.Stats().LiveEntries != b.Stats().LiveEntries || len(a.PendingFileOps()) != len(b.PendingFileOps()) {
				t.Fatal("restored allocator differs")
			}
			// The restored allocator behaves identically from here on.
			da, ea := a.Allocate([]Request{req("n", 7), req("m", 4*unit4k)}, t0+100*sec)
			db, eb := b.Allocate([]Request{req("n", 7), req("m", 4*unit4k)}, t0+100*sec)
			if (ea == nil) != (eb == nil) || len(da) != len(db) || !bytes.Equal(encoded(t, a), encoded(t, b)) {
				t.Fatalf("diverged after restore: %v %v / %v %v", da, ea, db, eb)
			}
		})
	}
}

// mutate returns a copy of recs with f applied to a deep copy of record i.
func mutate(t *testing.T, recs []Record, f func([]Record) []Record) []Record {
	t.Helper()
	var cp []Record
	for _, r := range recs {
		raw, err := EncodeRecord(r)
		must(t, err)
		back, err := DecodeRecord(raw)
		must(t, err)
		cp = append(cp, back)
	}
	return f(cp)
}

func firstEntry(recs []Record, unit uint64) int {
	for i, r := range recs {
		if r.Entry != nil && r.Entry.Unit == unit {
			return i
		}
	}
	return -1
}

func TestRestoreRefusesInconsistentBucketRecords(t *testing.T) {
	a := bucketState(t)
	recs := a.Records()
	cases := map[string]struct {
		f    func([]Record) []Record
		want string
	}{
		"no records":            {func([]Record) []Record { return nil }, "no records"},
		"meta missing":          {func(r []Record) []Record { return r[1:] }, "want meta"},
		"other allocator":       {func(r []Record) []Record { r[0].Meta.Allocator = KindShard; return r }, "allocator"},
		"other alignment":       {func(r []Record) []Record { r[0].Meta.Alignment = 8192; return r }, "alignment"},
		"other capacity":        {func(r []Record) []Record { r[0].Meta.UnitCapacity *= 2; return r }, "capacity"},
		"unknown version":       {func(r []Record) []Record { r[1].V = 2; return r }, "version"},
		"two parts":             {func(r []Record) []Record { r[1].Entry = &EntryRecord{}; return r }, "parts"},
		"ids out of order":      {func(r []Record) []Record { return append([]Record{r[0], r[len(r)-1]}, r[1:len(r)-1]...) }, "out of order"},
		"id not below next id":  {func(r []Record) []Record { r[0].Meta.NextBucketID = 2; return r }, "next id"},
		"cursor behind entries": {func(r []Record) []Record { r[1].Unit.Cursor = unit4k; r[1].Unit.Tombstoned = 0; return r }, "cursor"},
		"overlapping entries": {func(r []Record) []Record {
			i := firstEntry(r, 1)
			r[i+1].Entry.Offset = 0
			return r
		}, "overlaps"},
		"unaligned entry": {func(r []Record) []Record { r[firstEntry(r, 1)].Entry.Offset = 1; return r }, "aligned offset"},
		"aligned size wrong": {func(r []Record) []Record {
			r[firstEntry(r, 1)].Entry.AlignedSize = 2 * unit4k
			return r
		}, "aligned size"},
		"entry of another bucket": {func(r []Record) []Record { r[firstEntry(r, 1)].Entry.Unit = 2; return r }, "follows bucket"},
		"dead bytes do not add up": {func(r []Record) []Record {
			r[len(r)-3].Unit.Tombstoned += unit4k
			return r
		}, "tombstoned"},
		"two open buckets":        {func(r []Record) []Record { r[1].Unit.State = UnitOpen; return r }, "open"},
		"deferred in bucket":      {func(r []Record) []Record { return append(r, Record{V: RecordV1, Deferred: &DeferredRecord{}}) }, "no deferred"},
		"entry before any bucket": {func(r []Record) []Record { return append([]Record{r[0], r[2]}, r[1:]...) }, "before any bucket"},
		"bad key":                 {func(r []Record) []Record { r[firstEntry(r, 1)].Entry.Key = ""; return r }, "empty key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := bucketState(t)
			before := encoded(t, b)
			err := b.Restore(mutate(t, recs, tc.f))
			if !errors.Is(err, ErrCorruptRecords) || api.CodeOf(err) != api.CodeCorrupt {
				t.Fatalf("Restore = %v, want ErrCorruptRecords", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if !bytes.Equal(encoded(t, b), before) {
				t.Fatal("a refused restore changed the state")
			}
		})
	}
}

func TestRestoreRefusesInconsistentShardRecords(t *testing.T) {
	recs := shardState(t).Records()
	var firstDeferred int
	for i, r := range recs {
		if r.Deferred != nil {
			firstDeferred = i
			break
		}
	}
	cases := map[string]struct {
		f    func([]Record) []Record
		want string
	}{
		"other shard count": {func(r []Record) []Record { r[0].Meta.ShardCount = 8; return r }, "shards"},
		"deferred overlaps an entry": {func(r []Record) []Record {
			d := r[firstDeferred].Deferred
			for _, x := range r {
				if x.Entry != nil && x.Entry.Unit == d.Unit {
					d.Offset = x.Entry.Offset
					return r
				}
			}
			// no entry in that shard: overlap with a copy of itself
			return append(r[:firstDeferred+1], append([]Record{{V: RecordV1, Deferred: &DeferredRecord{Unit: d.Unit, Offset: d.Offset, Length: d.Length}}}, r[firstDeferred+1:]...)...)
		}, "overlap"},
		"unaligned deferred": {func(r []Record) []Record { r[firstDeferred].Deferred.Length = 5; return r }, "aligned range"},
		"bucket fields":      {func(r []Record) []Record { r[1].Unit.Cursor = 4096; return r }, "bucket fields"},
		"shard out of range": {func(r []Record) []Record { r[1].Unit.ID = 4; return r }, "shard 4 of 4"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := shardState(t)
			before := encoded(t, b)
			err := b.Restore(mutate(t, recs, tc.f))
			if !errors.Is(err, ErrCorruptRecords) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore = %v, want ErrCorruptRecords saying %q", err, tc.want)
			}
			if !bytes.Equal(encoded(t, b), before) {
				t.Fatal("a refused restore changed the state")
			}
		})
	}
}

func TestDecodeRecordIsStrict(t *testing.T) {
	good, err := EncodeRecord(Record{V: RecordV1, Entry: &EntryRecord{Unit: 1, Key: "k", Size: 1, AlignedSize: 4096}})
	must(t, err)
	if _, err := DecodeRecord(good); err != nil {
		t.Fatalf("good record refused: %v", err)
	}
	unknownField, err := msgpack.Marshal(map[string]any{"v": 1, "entry": map[string]any{"unit": 1, "color": "red"}})
	must(t, err)
	twoParts, err := EncodeRecord(Record{V: RecordV1, Entry: &EntryRecord{}, Unit: &UnitRecord{}})
	must(t, err)
	none, err := EncodeRecord(Record{V: RecordV1})
	must(t, err)
	for name, raw := range map[string][]byte{
		"unknown field":  unknownField,
		"trailing bytes": append(append([]byte{}, good...), 0xc0),
		"truncated":      good[:len(good)-2],
		"two parts":      twoParts,
		"no part":        none,
		"not msgpack":    {0xc1},
		"too large":      make([]byte, MaxRecordLen+1),
	} {
		if _, err := DecodeRecord(raw); !errors.Is(err, ErrCorruptRecords) {
			t.Errorf("%s: DecodeRecord = %v, want ErrCorruptRecords", name, err)
		}
	}
}
