package dfsio

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

func testDesc(off int64, size int64) api.DFSDescriptor {
	return api.DFSDescriptor{Allocator: "bucket", Path: dfsalloc.BucketPath(1), UnitID: 1, Offset: off, Size: size, AlignedSize: 4096}
}

var inc7 = api.ObjectIncarnation{High: 0xabc, Low: 7}

func TestRecordsRoundTripThroughTheJournal(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		p := testFS(t, fsync)
		if recs, torn, err := p.ScanRecords(); err != nil || len(recs) != 0 || torn != 0 {
			t.Fatalf("a root without a journal: %v %d %v", recs, torn, err)
		}
		if err := p.AppendPutRecord("k", "", inc7, testDesc(0, 5), []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := p.AppendRecords([]RangeRecord{RemovedRecord("k", inc7, testDesc(0, 5), true)}, true); err != nil {
			t.Fatal(err)
		}
		recs, torn, err := p.ScanRecords()
		if err != nil || torn != 0 || len(recs) != 2 {
			t.Fatalf("scan: %+v torn %d %v", recs, torn, err)
		}
		if recs[0].Op != RecordPut || recs[0].Key != "k" || recs[0].Inc != inc7 || recs[0].CRC != Checksum([]byte("hello")) || recs[0].Desc() != testDesc(0, 5) {
			t.Fatalf("put record %+v", recs[0])
		}
		if recs[1].Op != RecordRemoved || !recs[1].Through || recs[1].CRC != 0 {
			t.Fatalf("removal record %+v", recs[1])
		}
		if _, err := os.Stat(filepath.Join(p.Root(), RecordsName)); err != nil {
			t.Fatal(err)
		}
		names, err := p.List()
		if err != nil || len(names) != 0 {
			t.Fatalf("the journal is not an allocator file: %v %v", names, err)
		}
	}
}

func TestEncodeRecordRefusesMalformed(t *testing.T) {
	bad := []RangeRecord{
		{V: 2, Op: RecordPut, Key: "k", Inc: inc7, Path: dfsalloc.BucketPath(1), Size: 1, Aligned: 4096},
		{V: 1, Op: "gone", Key: "k", Inc: inc7, Path: dfsalloc.BucketPath(1), Size: 1, Aligned: 4096},
		{V: 1, Op: RecordPut, Key: "", Inc: inc7, Path: dfsalloc.BucketPath(1), Size: 1, Aligned: 4096},
		{V: 1, Op: RecordPut, Key: "k", Path: dfsalloc.BucketPath(1), Size: 1, Aligned: 4096},
		{V: 1, Op: RecordPut, Key: "k", Inc: inc7, Path: "../etc/passwd", Size: 1, Aligned: 4096},
		{V: 1, Op: RecordPut, Key: "k", Inc: inc7, Path: dfsalloc.BucketPath(1), Size: 8192, Aligned: 4096},
		{V: 1, Op: RecordPut, Key: "k", Inc: inc7, Path: dfsalloc.BucketPath(1), Size: 1, Aligned: 4096, Through: true},
	}
	for i, r := range bad {
		if _, err := EncodeRecord(r); err == nil {
			t.Errorf("record %d %+v encoded", i, r)
		}
	}
}

// A crash can leave the journal's tail half-written, or (without fsync) a
// block of zeros in its middle: such frames count as torn, and every whole
// record around them is still read.
func TestDecodeRecordsSkipsTornFrames(t *testing.T) {
	var frames [][]byte
	for i := range 4 {
		r := PutRecord(fmt.Sprintf("k%d", i), "", inc7, testDesc(int64(i)*4096, 1), []byte{byte(i)})
		f, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	join := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	flipped := append([]byte(nil), frames[1]...)
	flipped[20] ^= 0x40
	cases := []struct {
		name string
		b    []byte
		keys []string
		torn int
	}{
		{"whole", join(frames...), []string{"k0", "k1", "k2", "k3"}, 0},
		{"torn tail", join(frames[0], frames[1], frames[2][:len(frames[2])-3]), []string{"k0", "k1"}, 1},
		{"only a magic", join(frames[0], []byte(recordMagic)), []string{"k0"}, 1},
		{"flipped bit", join(frames[0], flipped, frames[2], frames[3]), []string{"k0", "k2", "k3"}, 1},
		{"zeros in the middle", join(frames[0], make([]byte, 4096), frames[3]), []string{"k0", "k3"}, 1},
		{"garbage then whole", join([]byte("xxSXR1\xff\xff\xff\xff"), frames[2]), []string{"k2"}, 1},
	}
	for _, c := range cases {
		got, torn := DecodeRecords(c.b)
		var keys []string
		for _, r := range got {
			keys = append(keys, r.Key)
		}
		if fmt.Sprint(keys) != fmt.Sprint(c.keys) || torn != c.torn {
			t.Errorf("%s: keys %v torn %d, want %v torn %d", c.name, keys, torn, c.keys, c.torn)
		}
	}
}

// Writers append concurrently (clients' put records, the leader's removal
// records): every record must come back whole.
func TestAppendRecordsConcurrentWritersDoNotInterleave(t *testing.T) {
	p := testFS(t, false)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := p.AppendPutRecord(fmt.Sprintf("w%d-%d", w, i), "t", inc7, testDesc(int64(i)*4096, 3), []byte("abc")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	recs, torn, err := p.ScanRecords()
	if err != nil || torn != 0 || len(recs) != writers*each {
		t.Fatalf("%d records, %d torn, %v", len(recs), torn, err)
	}
}

// A power cut keeps some prefix of an unsynced journal (an append is one
// write at its end): at every cut, the scan returns exactly the records
// wholly before it, and counts at most the one torn frame after them.
func TestJournalEveryPowerCutKeepsAWholePrefix(t *testing.T) {
	var b []byte
	var ends []int
	for i := range 5 {
		f, err := EncodeRecord(PutRecord(fmt.Sprintf("key-%d", i), "t", inc7, testDesc(int64(i)*4096, 3), []byte("abc")))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, f...)
		ends = append(ends, len(b))
	}
	for cut := 0; cut <= len(b); cut++ {
		whole := 0
		for _, e := range ends {
			if e <= cut {
				whole++
			}
		}
		recs, torn := DecodeRecords(b[:cut])
		wantTorn := 0
		if whole < len(ends) && cut > 0 && (whole == 0 || cut > ends[whole-1]) {
			wantTorn = 1
		}
		if len(recs) != whole || torn != wantTorn {
			t.Fatalf("cut at %d: %d records, %d torn; want %d and %d", cut, len(recs), torn, whole, wantTorn)
		}
		for i, r := range recs {
			if r.Key != fmt.Sprintf("key-%d", i) {
				t.Fatalf("cut at %d: record %d is %q", cut, i, r.Key)
			}
		}
	}
}
