package holder

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/fsys"
)

// The holder's small files other than bucket metadata (FuzzDecodeMeta):
// the GC intent, the tombstone floor and the identity marker. For each,
// arbitrary bytes never panic the reader, a refusal is a typed error, the
// reader allocates no more than the file's size justifies, and whatever it
// accepts satisfies the file's invariants and survives being written and
// read again unchanged.

// fixChecksum returns b with its CRC-32C trailer recomputed when b ends in
// a checksum trailer, so the fuzzer reaches the decoder behind the CRC;
// nil when b has no trailer.
func fixChecksum(b []byte) []byte {
	if len(b) < trailerLen || !bytes.Equal(b[len(b)-trailerLen:len(b)-5], checksumTrailer) || b[len(b)-5] != 0xce {
		return nil
	}
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[len(c)-4:], crc32c(c[:len(c)-4]))
	return c
}

// seedOf answers an encoder's bytes, failing f on its error.
func seedOf(f *testing.F) func([]byte, error) []byte {
	return func(b []byte, err error) []byte {
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
}

// reencode writes v again with encode and reads the bytes back with
// decode, which must accept them.
func reencode[T any](t *testing.T, what string, v T, encode func(T) ([]byte, error), decode func(string, []byte) (T, error)) T {
	t.Helper()
	again, err := encode(v)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decode("fuzz", again)
	if err != nil {
		t.Fatalf("re-encoded %s refused: %v", what, err)
	}
	return back
}

// fuzzChecksummed fuzzes check from seeds and an empty file, running it on
// every input and again on the input with its checksum fixed (fixChecksum).
func fuzzChecksummed(f *testing.F, check func(*testing.T, []byte), seeds ...[]byte) {
	for _, b := range seeds {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		check(t, b)
		if c := fixChecksum(b); c != nil {
			check(t, c)
		}
	})
}

// fileAllocBound is the most reading an n-byte holder file may allocate:
// the walk before the decoder admits an item per byte at most, and no
// decoded record is over 64 bytes (twice that for slice growth, once more
// for a map entry), plus the decoder's and the runtime's own.
func fileAllocBound(n int) uint64 { return 1<<20 + uint64(n)*256 }

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func FuzzDecodeGCIntent(f *testing.F) {
	seed, seeds := seedOf(f), [][]byte(nil)
	for _, in := range []*gcIntent{
		{State: gcPrepared, Sources: []uint64{1}, Target: 2},
		{State: gcPrepared, Sources: []uint64{3, 4, 5, 6, 7, 8, 9, 10}, Target: 11},
		{State: gcCommitted, Sources: []uint64{1, 2}, Target: 3},
		{State: gcCommitted, Sources: []uint64{7}}, // fully dead sources: no target
		// Refused, one check each: the fuzzer starts next to every check.
		{State: gcCommitted, Sources: []uint64{4, 4}, Target: 5},
		{State: gcCommitted, Sources: []uint64{0}, Target: 5},
		{State: gcCommitted, Sources: []uint64{5}, Target: 5},
		{State: gcPrepared, Sources: []uint64{4}},
		{State: gcPrepared, Sources: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, Target: 10},
		{State: 3, Sources: []uint64{1}, Target: 2},
		{State: gcCommitted},
	} {
		seeds = append(seeds, seed(encodeGCIntent(in)))
	}
	fuzzChecksummed(f, checkGCIntent, seeds...)
}

func checkGCIntent(t *testing.T, b []byte) {
	var in *gcIntent
	var err error
	if grew := allocated(func() { in, err = decodeGCIntent("fuzz", b) }); grew > fileAllocBound(len(b)) {
		t.Fatalf("decoding a %d-byte GC intent allocated %d bytes", len(b), grew)
	}
	if err != nil {
		if !errors.Is(err, ErrGCIntentPending) || (!errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion)) {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	// The invariants recovery relies on, checked here independently.
	if in.V != gcIntentVersion || (in.State != gcPrepared && in.State != gcCommitted) {
		t.Fatalf("accepted version %d state %d", in.V, in.State)
	}
	if len(in.Sources) < 1 || len(in.Sources) > maxGCSources || (in.State == gcPrepared && in.Target == 0) {
		t.Fatalf("accepted %v", in)
	}
	for i, s := range in.Sources {
		if s == 0 || s == in.Target {
			t.Fatalf("accepted source %d with target %d", s, in.Target)
		}
		for _, o := range in.Sources[:i] {
			if o == s {
				t.Fatalf("accepted source %d twice", s)
			}
		}
	}
	back := reencode(t, "GC intent", in, encodeGCIntent, decodeGCIntent)
	// The checksum is over the bytes, which a re-encoding may spell
	// differently (an int in a wider form than needed): compare the rest.
	back.Checksum, in.Checksum = 0, 0
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("round trip changed the intent: %+v, then %+v", in, back)
	}
}

func FuzzDecodeFloors(f *testing.F) {
	seed, seeds := seedOf(f), [][]byte(nil)
	for _, floors := range []map[string]floorEntry{
		{},
		{"a": {inc: api.ObjectIncarnation{High: 1, Low: 2}, at: 1700000000000000000}},
		{"k1": {inc: api.ObjectIncarnation{Low: 1}, at: 1}, "k2/x": {inc: api.ObjectIncarnation{High: 1 << 60, Low: 1 << 63}, at: -1}},
		{"ev": {inc: api.ObjectIncarnation{High: 1, Low: 3}, at: 5, evicted: true}, "rm": {inc: api.ObjectIncarnation{High: 1, Low: 4}, at: 6}},
	} {
		seeds = append(seeds, seed(encodeFloors(floors)))
	}
	// Refused: a key listed twice, an invalid key.
	for _, items := range [][]floorFileItem{{{Key: "a", At: 1}, {Key: "a", At: 2}}, {{Key: ""}}} {
		seeds = append(seeds, seed(sealChecksum(&floorFile{V: floorVersion, Floors: items})))
	}
	fuzzChecksummed(f, checkFloors, seeds...)
}

func checkFloors(t *testing.T, b []byte) {
	var floors map[string]floorEntry
	var err error
	if grew := allocated(func() { floors, err = decodeFloors("fuzz", b) }); grew > fileAllocBound(len(b)) {
		t.Fatalf("decoding a %d-byte tombstone floor allocated %d bytes", len(b), grew)
	}
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	for k := range floors {
		if err := api.ValidKey(k); err != nil {
			t.Fatalf("accepted key %q: %v", k, err)
		}
	}
	// One entry per record in the file: a key listed twice is refused,
	// not folded into one.
	var ff floorFile
	if err := msgpack.Unmarshal(b, &ff); err != nil || len(ff.Floors) != len(floors) {
		t.Fatalf("accepted %d records as %d keys (%v)", len(ff.Floors), len(floors), err)
	}
	back := reencode(t, "tombstone floor", floors, encodeFloors, decodeFloors)
	if !reflect.DeepEqual(back, floors) {
		t.Fatalf("round trip changed the floor: %v, then %v", floors, back)
	}
}

// FuzzReadIdentity reads fuzzed bytes as the identity marker of a
// directory, through readIdentity (the marker's only reader).
func FuzzReadIdentity(f *testing.F) {
	for _, id := range []Identity{
		{V: markerVersion, SegmentID: "6f1c1c3e-8a4b-4bde-9d62-2f0d3b7f6a11", ClusterID: 42, Created: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)},
		{V: markerVersion, SegmentID: api.SegmentID(uuid.NewString()), Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))},
	} {
		b, err := json.MarshalIndent(id, "", "  ")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, '\n'))
	}
	f.Add([]byte(`{"v":2,"segment_id":"x"}`))
	// Spellings uuid.Parse takes that are not the canonical form: refused.
	for _, spelling := range []string{
		"6F1C1C3E-8A4B-4BDE-9D62-2F0D3B7F6A11",
		"{6f1c1c3e-8a4b-4bde-9d62-2f0d3b7f6a11}",
		"urn:uuid:6f1c1c3e-8a4b-4bde-9d62-2f0d3b7f6a11",
		"6f1c1c3e8a4b4bde9d622f0d3b7f6a11",
	} {
		f.Add([]byte(`{"v":1,"segment_id":"` + spelling + `","cluster_id":1,"created":"2026-01-01T00:00:00Z"}`))
	}
	f.Add([]byte(`{"v":1,"segment_id":"6f1c1c3e-8a4b-4bde-9d62-2f0d3b7f6a11","cluster_id":1,"created":"2026-01-01T00:00:00Z","extra":1}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, MarkerFileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var id Identity
		var err error
		if grew := allocated(func() { id, err = readIdentity(fsys.OS{}, dir) }); grew > fileAllocBound(len(b)) {
			t.Fatalf("reading a %d-byte marker allocated %d bytes", len(b), grew)
		}
		if err != nil {
			var tooLarge *fsys.FileTooLargeError
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) && !(errors.As(err, &tooLarge) && len(b) > maxMarkerSize) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if id.V != markerVersion {
			t.Fatalf("accepted marker version %d", id.V)
		}
		if u, err := uuid.Parse(string(id.SegmentID)); err != nil || u.String() != string(id.SegmentID) {
			t.Fatalf("accepted segment id %q, not a UUID in canonical form (%v)", id.SegmentID, err)
		}
		// What the reader accepts, the writer writes and the reader reads
		// back as the same identity.
		again := t.TempDir()
		if err := writeIdentity(fsys.OS{}, again, id); err != nil {
			t.Fatalf("writing an accepted identity %+v: %v", id, err)
		}
		back, err := readIdentity(fsys.OS{}, again)
		if err != nil {
			t.Fatalf("a written identity is refused: %v", err)
		}
		if back.V != id.V || back.SegmentID != id.SegmentID || back.ClusterID != id.ClusterID || !back.Created.Equal(id.Created) {
			t.Fatalf("round trip changed the identity: %+v, then %+v", id, back)
		}
	})
}
