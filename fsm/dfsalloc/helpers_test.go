package dfsalloc

import (
	"bytes"
	"testing"

	"sexton/api"
)

const (
	kb  = int64(1024)
	sec = int64(1e9)
	t0  = int64(1_764_000_000) * sec
)

func bucketConfig(capacity int64, maxBuckets int) Config {
	c := DefaultConfig()
	c.Allocator = KindBucket
	c.BucketCapacity = capacity
	c.MaxBucketCount = maxBuckets
	return c
}

func shardConfig(count int, capacity int64) Config {
	c := DefaultConfig()
	c.ShardCount = count
	c.ShardCapacity = capacity
	return c
}

func mustNew(t testing.TB, c Config) Allocator {
	t.Helper()
	a, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func mustAlloc(t testing.TB, a Allocator, now int64, reqs ...Request) []api.DFSDescriptor {
	t.Helper()
	ds, err := a.Allocate(reqs, now)
	if err != nil {
		t.Fatalf("Allocate(%v): %v", reqs, err)
	}
	if len(ds) != len(reqs) {
		t.Fatalf("Allocate(%v) gave %d descriptors", reqs, len(ds))
	}
	return ds
}

func req(key string, size int64) Request { return Request{Key: key, Size: size} }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// encoded is the msgpack bytes of every record, concatenated.
func encoded(t testing.TB, a Allocator) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range a.Records() {
		raw, err := EncodeRecord(r)
		if err != nil {
			t.Fatalf("EncodeRecord: %v", err)
		}
		buf.Write(raw)
	}
	return buf.Bytes()
}

// roundTrip encodes a's records, decodes them strictly into a new allocator
// of the same config and checks the new one writes the same bytes.
func roundTrip(t testing.TB, a Allocator) Allocator {
	t.Helper()
	var recs []Record
	for _, r := range a.Records() {
		raw, err := EncodeRecord(r)
		must(t, err)
		back, err := DecodeRecord(raw)
		if err != nil {
			t.Fatalf("DecodeRecord: %v", err)
		}
		recs = append(recs, back)
	}
	b := mustNew(t, a.Config())
	if err := b.Restore(recs); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if want, got := encoded(t, a), encoded(t, b); !bytes.Equal(want, got) {
		t.Fatalf("Records→Restore→Records differs:\nwant %x\ngot  %x", want, got)
	}
	return b
}

func unit(t testing.TB, a Allocator, id uint64) UnitStats {
	t.Helper()
	for _, u := range a.Stats().Units {
		if u.Unit == id {
			return u
		}
	}
	t.Fatalf("unit %d not in stats", id)
	return UnitStats{}
}
