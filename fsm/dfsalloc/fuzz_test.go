package dfsalloc

import "testing"

// FuzzDecodeAndRestore feeds arbitrary bytes as one record after a valid
// meta record: decoding and restoring must refuse or accept, never panic,
// and an accepted state must write records that restore again.
func FuzzDecodeAndRestore(f *testing.F) {
	for _, a := range []Allocator{bucketState(f), shardState(f)} {
		for _, r := range a.Records() {
			raw, err := EncodeRecord(r)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw, a.Kind() == KindBucket)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, bucket bool) {
		r, err := DecodeRecord(raw)
		if err != nil {
			return
		}
		cfg := shardConfig(4, 16*unit4k)
		if bucket {
			cfg = bucketConfig(4*unit4k, 4)
		}
		a := mustNew(t, cfg)
		meta := a.Records()[0]
		if bucket {
			meta.Meta.NextBucketID = 8
		}
		// Give an entry or a deferred range the unit record that makes it
		// most likely to be accepted, so the fuzzer explores the checks
		// behind the first one.
		recs := []Record{meta, r}
		holder := &UnitRecord{State: UnitOpen, File: FileReady}
		switch {
		case r.Meta != nil:
			recs = []Record{r}
		case r.Entry != nil:
			holder.ID = r.Entry.Unit
			if bucket {
				holder.State = UnitSealed
				holder.Cursor, holder.Tombstoned = r.Entry.Offset+r.Entry.AlignedSize, r.Entry.Offset
			}
			recs = []Record{meta, {V: RecordV1, Unit: holder}, r}
		case r.Deferred != nil:
			holder.ID = r.Deferred.Unit
			recs = []Record{meta, {V: RecordV1, Unit: holder}, r}
		}
		if err := a.Restore(recs); err != nil {
			return
		}
		roundTrip(t, a)
	})
}
