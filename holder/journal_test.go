package holder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sexton/api"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
	"sexton/internal/testutil"
)

// mainFormatDir copies testdata/main-format: a directory written by the
// build before the put journal (whole .meta files, no journal), with
// BucketKeysLimit 3: a, b (tombstoned), c in bucket 1, d in bucket 2.
func mainFormatDir(t *testing.T) string {
	t.Helper()
	return copyDir(t, filepath.Join("testdata", "main-format"))
}

func wantMainFormatContent(t *testing.T, s *Store) {
	t.Helper()
	for i, k := range []string{"a", "c", "d"} {
		n := map[string]int{"a": 1, "c": 3, "d": 4}[k]
		mustGet(t, s, k, incN(uint64(n)), valueOf(k, 1000+n-1))
		_ = i
	}
	if _, err := s.Get("b", incN(2)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tombstoned b: %v", err)
	}
	if err := s.Put("b", "tenant", incN(2), valueOf("b", 1001)); !errors.Is(err, ErrTombstoned) {
		t.Fatalf("put of tombstoned b: %v", err)
	}
}

// A directory written without journals opens with every record, its
// newest bucket gets a journal, and puts into that bucket go to the
// journal: its .meta keeps its bytes. After a restart everything reads
// back.
func TestOpenMainFormatPutsGoToTheJournal(t *testing.T) {
	dir := mainFormatDir(t)
	meta2 := filepath.Join(dir, metaName(2))
	before, err := os.ReadFile(meta2)
	if err != nil {
		t.Fatal(err)
	}
	s := openT(t, dir, StoreOptions{BucketKeysLimit: 3})
	if got := s.OpenReport().CreatedJournals; len(got) != 1 || got[0] != journalName(2) {
		t.Fatalf("created journals %v, want [%s]", got, journalName(2))
	}
	wantMainFormatContent(t, s)
	mustPut(t, s, "e", incN(5), valueOf("e", 777))
	mustPut(t, s, "f", incN(6), valueOf("f", 778))
	after, _ := os.ReadFile(meta2)
	if string(after) != string(before) {
		t.Fatalf("a put into bucket 2 rewrote %s", meta2)
	}
	if st, err := os.Stat(filepath.Join(dir, journalName(2))); err != nil || st.Size() == 0 {
		t.Fatalf("journal of bucket 2: %v %v", st, err)
	}
	s.Close()

	s = openT(t, dir, StoreOptions{BucketKeysLimit: 3})
	defer s.Close()
	if got := s.OpenReport().CreatedJournals; len(got) != 0 {
		t.Fatalf("second open created journals again: %v", got)
	}
	wantMainFormatContent(t, s)
	mustGet(t, s, "e", incN(5), valueOf("e", 777))
	mustGet(t, s, "f", incN(6), valueOf("f", 778))
	wantCleanInspectDir(t, dir)
}

func wantCleanInspectDir(t *testing.T, dir string) {
	t.Helper()
	if rep, err := Inspect(dir); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("inspect: %v %v", err, rep.Problems)
	}
}

// A put into a bucket that has its .meta renames nothing, fsyncs no
// directory and writes no .meta, and a small one syncs only the journal
// (which carries its value): its cost does not depend on how many records
// the bucket holds.
func TestPutIntoABucketWithRecordsRewritesNoMetadata(t *testing.T) {
	dir := t.TempDir()
	ff := errorfs.NewFaulty(fsys.OS{})
	s := openT(t, dir, StoreOptions{FS: ff})
	defer s.Close()
	mustPut(t, s, "first", incN(1), []byte("first"))
	for i := range 200 {
		mustPut(t, s, fmt.Sprintf("k-%03d", i), incN(uint64(i+2)), valueOf("k", 100))
	}
	ff.ResetCounts()
	mustPut(t, s, "late", incN(1000), valueOf("late", 4096))
	if n := ff.Count(errorfs.OpRename); n != 0 {
		t.Fatalf("the put renamed %d files", n)
	}
	if n := ff.Count(errorfs.OpSyncDir); n != 0 {
		t.Fatalf("the put fsynced the directory %d times", n)
	}
	if n := ff.CountMatching(errorfs.OpWrite, "*.meta*"); n != 0 {
		t.Fatalf("the put wrote metadata files %d times", n)
	}
	if n := ff.Count(errorfs.OpSync); n != 1 {
		t.Fatalf("the put synced %d times, want 1 (the journal, which carries the value)", n)
	}
	if n := ff.CountMatching(errorfs.OpWrite, "*.journal"); n != 1 {
		t.Fatalf("the put wrote the journal %d times, want 1", n)
	}
}

// journalPath writes a (first commit: .meta), then b and c (journal
// records) into bucket 1, closes the store, and returns the directory and
// the journal's path and bytes.
func journalOfThree(t *testing.T) (string, string, []byte) {
	t.Helper()
	s, dir := openTemp(t)
	mustPut(t, s, "a", incN(1), valueOf("a", 300))
	mustPut(t, s, "b", incN(2), valueOf("b", 301))
	mustPut(t, s, "c", incN(3), valueOf("c", 302))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	jp := filepath.Join(dir, journalName(1))
	b, err := os.ReadFile(jp)
	if err != nil {
		t.Fatal(err)
	}
	return dir, jp, b
}

// recordEnds is the end offset of every whole record of a journal.
func recordEnds(t *testing.T, b []byte) []int {
	t.Helper()
	var ends []int
	for off := 0; off < len(b); {
		n := int(uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24)
		off += journalFrameHeader + n
		ends = append(ends, off)
	}
	return ends
}

// A journal whose last record was not written whole (cut short, or its
// bytes not all on disk) lost a put that was never acknowledged: the open
// drops that record, reports the journal, and cuts the tail off so the
// next append lands right after the last good record.
func TestJournalTornTailIsDropped(t *testing.T) {
	tails := map[string]func(b []byte, ends []int) []byte{
		"cut short":       func(b []byte, ends []int) []byte { return b[:ends[0]+5] },
		"header only":     func(b []byte, ends []int) []byte { return b[:ends[0]+journalFrameHeader] },
		"last byte wrong": func(b []byte, _ []int) []byte { b[len(b)-1] ^= 0x20; return b },
		"zero filled":     func(b []byte, ends []int) []byte { clear(b[ends[0]:]); return b },
	}
	for name, tear := range tails {
		t.Run(name, func(t *testing.T) {
			dir, jp, b := journalOfThree(t)
			ends := recordEnds(t, b)
			if len(ends) != 2 {
				t.Fatalf("journal has %d records, want 2", len(ends))
			}
			if err := os.WriteFile(jp, tear(b, ends), 0o644); err != nil {
				t.Fatal(err)
			}
			s := openT(t, dir, StoreOptions{})
			if got := s.OpenReport().TornJournals; len(got) != 1 || got[0] != journalName(1) {
				t.Fatalf("torn journals %v", got)
			}
			mustGet(t, s, "a", incN(1), valueOf("a", 300))
			mustGet(t, s, "b", incN(2), valueOf("b", 301))
			if _, err := s.Get("c", incN(3)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("c from the torn record: %v", err)
			}
			if st, _ := os.Stat(jp); st.Size() != int64(ends[0]) {
				t.Fatalf("journal is %d bytes after open, want %d (cut after b)", st.Size(), ends[0])
			}
			mustPut(t, s, "c", incN(3), valueOf("c", 302)) // the writer's retry
			mustPut(t, s, "d", incN(4), []byte("d"))
			s.Close()
			s = openT(t, dir, StoreOptions{})
			defer s.Close()
			if got := s.OpenReport().TornJournals; len(got) != 0 {
				t.Fatalf("torn again: %v", got)
			}
			mustGet(t, s, "c", incN(3), valueOf("c", 302))
			mustGet(t, s, "d", incN(4), []byte("d"))
		})
	}
}

// A bad record with more records after it is not a torn tail: the open
// fails closed naming the journal and the record's offset, and changes
// nothing in the directory.
func TestJournalCorruptRecordInTheMiddleFailsClosed(t *testing.T) {
	dir, jp, b := journalOfThree(t)
	b[journalFrameHeader+3] ^= 0x01 // inside the first record's payload
	if err := os.WriteFile(jp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.DirContents(t, dir)
	_, err := OpenStore(dir, StoreOptions{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), journalName(1)) || !strings.Contains(err.Error(), "offset 0") {
		t.Fatalf("open: %v, want ErrCorrupt naming %s and offset 0", err, journalName(1))
	}
	sameSnapshot(t, before, testutil.DirContents(t, dir))
	if rep, err := Inspect(dir); err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], journalName(1)) {
		t.Fatalf("inspect: %v %v", err, rep.Problems)
	}
}

// A journal record that does not continue the bucket's records (a gap: the
// .meta it was appended after is not the one on disk) fails closed.
func TestJournalRecordWithAGapFailsClosed(t *testing.T) {
	dir, jp, b := journalOfThree(t)
	ends := recordEnds(t, b)
	if err := os.WriteFile(jp, b[ends[0]:], 0o644); err != nil { // c's record alone: slot 2 after a 1-record .meta
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, StoreOptions{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), journalName(1)) {
		t.Fatalf("open: %v, want ErrCorrupt naming %s", err, journalName(1))
	}
}

// Compaction folds the journal into the .meta and empties the journal;
// records, tombstones and later puts read back after a restart, and a
// journal that still holds records the .meta has (a cut that undid the
// truncation) replays idempotently.
func TestCompactJournalFoldsRecordsIntoMeta(t *testing.T) {
	dir, jp, b := journalOfThree(t)
	s := openT(t, dir, StoreOptions{})
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "b", incN(2))}), api.AckRemoved)
	if err := s.CompactJournals(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(jp); st.Size() != 0 {
		t.Fatalf("journal is %d bytes after compaction", st.Size())
	}
	if m := readMetaFile(t, dir, 1); len(m.Objects) != 3 || !m.Objects[1].Tombstoned {
		t.Fatalf(".meta after compaction: %+v", m.Objects)
	}
	mustPut(t, s, "d", incN(4), []byte("d"))
	s.Close()

	// The truncation undone: the old records come back in front.
	after, _ := os.ReadFile(jp)
	if err := os.WriteFile(jp, append(append([]byte(nil), b...), after...), 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	mustGet(t, s, "a", incN(1), valueOf("a", 300))
	mustGet(t, s, "c", incN(3), valueOf("c", 302))
	mustGet(t, s, "d", incN(4), []byte("d"))
	wantRefused(t, s, "b", incN(2))
}

// Compactions running while puts append to the same bucket and
// tombstones rewrite its .meta lose nothing: after a restart every put
// reads back and every tombstone holds.
func TestCompactionWhilePutsAndTombstonesRun(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{BucketKeysLimit: MaxBucketKeysLimit})
	const writers, each = 4, 40
	done := make(chan struct{})
	compactErr := make(chan error, 1)
	go func() {
		defer close(compactErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := s.CompactJournals(); err != nil {
				compactErr <- err
				return
			}
		}
	}()
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				n := uint64(w*each + i + 1)
				k := fmt.Sprintf("w%d-%d", w, i)
				if err := s.Put(k, "t", incN(n), valueOf(k, 200)); err != nil {
					errs <- err
					return
				}
				if i%5 == 4 {
					rs := s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, n, k, incN(n))})
					if rs[0].Outcome != api.AckRemoved {
						errs <- fmt.Errorf("tombstone of %s: %v", k, rs[0].Outcome)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-compactErr; err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, dir, StoreOptions{BucketKeysLimit: MaxBucketKeysLimit})
	defer s.Close()
	for w := range writers {
		for i := range each {
			n := uint64(w*each + i + 1)
			k := fmt.Sprintf("w%d-%d", w, i)
			if i%5 == 4 {
				wantRefused(t, s, k, incN(n))
				continue
			}
			mustGet(t, s, k, incN(n), valueOf(k, 200))
		}
	}
}
