//go:build testhooks

package holder

import (
	"testing"
)

// A directory written without journals, opened under the power-loss
// model: the open creates the open bucket's journal and a put appends to
// it. A cut right after the open (the conversion) or right after the put
// returned leaves a directory that opens with every acknowledged record.
func TestPowerLossMainFormatPut(t *testing.T) {
	for _, cut := range []string{"after-open", "after-put"} {
		t.Run(cut, func(t *testing.T) {
			dir := mainFormatDir(t)
			pl := newPowerLoss(t, dir)
			s := openT(t, dir, StoreOptions{FS: pl, BucketKeysLimit: 3})
			acked := false
			if cut == "after-put" {
				mustPut(t, s, "e", incN(5), valueOf("e", 777))
				acked = true
			}
			powerCut(t, s, pl)
			wantCleanInspect(t, dir, "after the cut")

			s = openT(t, dir, StoreOptions{BucketKeysLimit: 3})
			defer s.Close()
			wantMainFormatContent(t, s)
			if acked {
				mustGet(t, s, "e", incN(5), valueOf("e", 777))
			}
		})
	}
}

// A journal compaction cut at each of its steps, and after it returned
// and a later put was appended to the emptied journal: every acknowledged
// put and tombstone survives.
func TestPowerLossCompact(t *testing.T) {
	for _, point := range withAfterReturn(CompactCrashPoints) {
		t.Run(pointName(point), func(t *testing.T) {
			dir := t.TempDir()
			pl := newPowerLoss(t, dir)
			s := openT(t, dir, StoreOptions{FS: pl})
			mustPut(t, s, "a", incN(1), valueOf("a", 300)) // the bucket's .meta
			mustPut(t, s, "b", incN(2), valueOf("b", 301)) // journal records
			mustPut(t, s, "c", incN(3), valueOf("c", 302))
			hit := cutAtPoint(t, pl, point)
			err := s.CompactJournals()
			if point != "" && !hit.Load() {
				t.Fatalf("%s was not hit", point)
			}
			later := false
			if point == "" {
				if err != nil {
					t.Fatal(err)
				}
				mustPut(t, s, "d", incN(4), valueOf("d", 303))
				later = true
			}
			powerCut(t, s, pl)
			wantCleanInspect(t, dir, "after the cut")

			s = openT(t, dir, StoreOptions{})
			defer s.Close()
			mustGet(t, s, "a", incN(1), valueOf("a", 300))
			mustGet(t, s, "b", incN(2), valueOf("b", 301))
			mustGet(t, s, "c", incN(3), valueOf("c", 302))
			if later {
				mustGet(t, s, "d", incN(4), valueOf("d", 303))
			}
			mustPut(t, s, "e", incN(5), []byte("e"))
			mustGet(t, s, "e", incN(5), []byte("e"))
		})
	}
}

// A commit of small values fdatasyncs only its journal record, which
// carries the values: after a cut that loses them from the bucket file
// (the model keeps only what was fsynced), the open writes them back
// from the journal and they read back; the next open finds nothing to
// write.
func TestPowerLossRedoWritesBackJournaledValues(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	s := openT(t, dir, StoreOptions{FS: pl})
	mustPut(t, s, "a", incN(1), valueOf("a", 300)) // the bucket's .meta, data fdatasynced
	mustPut(t, s, "b", incN(2), valueOf("b", 4096))
	mustPut(t, s, "c", incN(3), valueOf("c", 5000))
	powerCut(t, s, pl)

	s = openT(t, dir, StoreOptions{})
	if got := s.OpenReport().RedoneBytes; got != 4096+5000 {
		t.Fatalf("open wrote back %d bytes, want %d", got, 4096+5000)
	}
	mustGet(t, s, "a", incN(1), valueOf("a", 300))
	mustGet(t, s, "b", incN(2), valueOf("b", 4096))
	mustGet(t, s, "c", incN(3), valueOf("c", 5000))
	s.Close()
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if got := s.OpenReport().RedoneBytes; got != 0 {
		t.Fatalf("second open wrote back %d bytes", got)
	}
	mustGet(t, s, "c", incN(3), valueOf("c", 5000))
}
