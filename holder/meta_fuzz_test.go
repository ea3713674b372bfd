package holder

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"sexton/api"
)

// FuzzDecodeMeta: arbitrary bytes never panic the metadata reader, and
// whatever it accepts is in bounds and re-encodes to bytes it accepts again.
func FuzzDecodeMeta(f *testing.F) {
	m := &BucketMetadata{BucketID: 3, DataSize: 10, Objects: []ObjectMeta{
		{Key: "k", Tenant: "t", Incarnation: api.ObjectIncarnation{High: 1, Low: 2}, Offset: 0, Size: 10, CRC32C: 5},
	}}
	seed := seedOf(f)
	good := seed(encodeMeta(m))
	legacy := seed(encodeLegacyMeta(&legacyBucketMetadata{BucketID: 3, DataSize: 4, Objects: []legacyObjectMeta{{Key: "x", Size: 4}}}))
	evicted := seed(encodeMeta(&BucketMetadata{BucketID: 3, DataSize: 10, Objects: []ObjectMeta{
		{Key: "k", Incarnation: api.ObjectIncarnation{High: 1, Low: 2}, Size: 10, Tombstoned: true, Evicted: true},
		{Key: "j", Incarnation: api.ObjectIncarnation{High: 1, Low: 3}, Size: 0, Tombstoned: true},
	}}))
	fuzzChecksummed(f, checkDecode, good, evicted, legacy)
}

func checkDecode(t *testing.T, b []byte) {
	got, err := decodeMeta("fuzz.meta", 3, b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	if err := got.validate(3); err != nil {
		t.Fatalf("accepted out-of-bounds metadata: %v", err)
	}
	again, err := encodeMeta(got)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeMeta("fuzz.meta", 3, again); err != nil {
		t.Fatalf("re-encoded metadata rejected: %v", err)
	}
}

// A tiny file that claims a huge number of records is refused before the
// decoder allocates for the claim (it used to take minutes and gigabytes),
// for every file kind that shares the checksummed encoding.
func TestHugeClaimRefusedWithoutAllocating(t *testing.T) {
	claim := []byte{0x81, 0xa7, 'o', 'b', 'j', 'e', 'c', 't', 's', 0xdd, 0x0f, 0xff, 0xff, 0xff}
	b := append(append(claim, checksumTrailer...), 0xce, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32c(b[:len(b)-4]))
	decoders := map[string]func() error{
		"meta":      func() error { _, err := decodeMeta("x.meta", 3, b); return err },
		"floor":     func() error { _, err := decodeFloors("floor", b); return err },
		"gc intent": func() error { _, err := decodeGCIntent("intent", b); return err },
	}
	for name, dec := range decoders {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := dec()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: refusing a %d-byte file allocated %d bytes", name, len(b), grew)
		}
	}
}
