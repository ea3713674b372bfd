//go:build testhooks

package holder

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"sexton/api"
	"sexton/holder/crashpoint"
	"sexton/internal/fsys"
	"sexton/internal/fsys/errorfs"
)

// The power-loss suite: an in-process power cut of the strict model
// filesystem (errorfs.PowerLoss) at every crash point of put, tombstone,
// floor and GC, and right after each returned; the directory is then
// brought back as a machine would find it and reopened with the real
// recovery on the real filesystem. It is the suite the durability audit
// (durability_test.go) runs with each fsync left out.

// cutAtPoint arms a power cut of pl at the crash point named point ("" is
// none: the caller cuts after the operation returned). It reports whether
// the point was hit.
func cutAtPoint(t *testing.T, pl *errorfs.PowerLoss, point string) *atomic.Bool {
	t.Helper()
	hit := new(atomic.Bool)
	crashpoint.SetHook(func(name string) {
		if point != "" && name == point {
			hit.Store(true)
			pl.Cut()
		}
	})
	t.Cleanup(func() { crashpoint.SetHook(nil) })
	return hit
}

// withAfterReturn is points plus "" (cut after the operation returned).
func withAfterReturn(points []string) []string { return append(slices.Clone(points), "") }

func pointName(p string) string {
	if p == "" {
		return "after-return"
	}
	return p
}

// wantCleanInspect fails when fsck finds a problem in dir.
func wantCleanInspect(t *testing.T, dir, when string) {
	t.Helper()
	if rep, err := Inspect(dir); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("%s: the directory has problems: %v %v", when, err, rep.Problems)
	}
}

// A put cut at each of its steps: acknowledged only when its last step
// (the journal's fdatasync, or a new bucket's directory fsync) ran, and then it reads back byte-identical after
// the power comes back; an unacknowledged put is absent or whole. Both
// into a fresh bucket and appended to one holding earlier records.
func TestPowerLossPut(t *testing.T) {
	// BucketKeysLimit 2: one record before → the same bucket (a journal
	// record carrying the value, or for a large value a data fdatasync
	// first); two → a new bucket (its first .meta).
	for _, c := range []struct {
		name   string
		before int
		value  []byte
		points []string
		last   string
		stream bool
	}{
		{"1-before", 1, crashValue(), PutCrashPoints, "put.after-journal-fsync", false},
		{"1-before-large", 1, valueOf(crashKey, journalInlineMax+1), PutLargeCrashPoints, "put.after-journal-fsync", false},
		{"2-before", 2, crashValue(), PutNewBucketCrashPoints, "put.after-dir-fsync", false},
		// Streamed: more than one chunk, through the page cache and with
		// O_DIRECT (not a multiple of its block, after 5000-byte records:
		// an unaligned append end).
		{"1-before-stream", 1, valueOf(crashKey, streamChunk+5000), PutStreamCrashPoints, "put.after-journal-fsync", true},
		{"1-before-direct", 1, valueOf(crashKey, directMin+5000), PutStreamCrashPoints, "put.after-journal-fsync", true},
		{"2-before-direct", 2, valueOf(crashKey, directMin+5000), append([]string{"put.stream-mid-value"}, PutNewBucketCrashPoints...), "put.after-dir-fsync", true},
	} {
		before, last, stream := c.before, c.last, c.stream
		crashValue := func() []byte { return c.value }
		for _, point := range withAfterReturn(c.points) {
			t.Run(fmt.Sprintf("%s/%s", c.name, pointName(point)), func(t *testing.T) {
				dir := t.TempDir()
				pl := newPowerLoss(t, dir)
				s := openT(t, dir, StoreOptions{FS: pl, BucketKeysLimit: 2})
				for i := range before {
					mustPut(t, s, fmt.Sprintf("earlier-%d", i), incN(uint64(i+1)), valueOf("earlier", 5000+i))
				}
				hit := cutAtPoint(t, pl, point)
				var err error
				if stream {
					err = s.PutStream(crashKey, "t", crashInc, int64(len(c.value)), bytes.NewReader(c.value))
				} else {
					err = s.Put(crashKey, "t", crashInc, crashValue())
				}
				acked := err == nil
				if point != "" && !hit.Load() {
					t.Fatalf("%s was not hit", point)
				}
				if acked != (point == "" || point == last) {
					t.Fatalf("cut at %s: put answered %v", pointName(point), err)
				}
				powerCut(t, s, pl)
				wantCleanInspect(t, dir, "after the cut")

				s = openT(t, dir, StoreOptions{BucketKeysLimit: 2})
				defer s.Close()
				for i := range before {
					mustGet(t, s, fmt.Sprintf("earlier-%d", i), incN(uint64(i+1)), valueOf("earlier", 5000+i))
				}
				got, err := s.Get(crashKey, crashInc)
				switch {
				case acked && (err != nil || string(got) != string(crashValue())):
					t.Fatalf("acknowledged put after the cut: %d bytes, %v", len(got), err)
				case !acked && err == nil && string(got) != string(crashValue()):
					t.Fatalf("unacknowledged put visible half-written: %d bytes", len(got))
				case !acked && err != nil && !errors.Is(err, ErrNotFound):
					t.Fatalf("unacknowledged put: %v", err)
				}
				if !acked {
					mustPut(t, s, crashKey, crashInc, crashValue()) // the writer's retry
					mustGet(t, s, crashKey, crashInc, crashValue())
				}
			})
		}
	}
}

// A tombstone cut at each of its steps: answered REMOVED only after its
// directory fsync, and then dead and refused after the power comes back;
// unanswered, the record is whole or dead. A bystander survives.
func TestPowerLossTombstone(t *testing.T) {
	for _, point := range withAfterReturn(TombstoneCrashPoints) {
		t.Run(pointName(point), func(t *testing.T) {
			s, acked := cutMark(t, point, "tombstone.after-dir-fsync", true, api.AckRemoved, (*Store).BatchMarkDeleted)
			got, err := s.Get(crashKey, crashInc)
			switch {
			case acked && !errors.Is(err, ErrNotFound):
				t.Fatalf("tombstone answered REMOVED, record readable after the cut: %v", err)
			case acked:
				wantRefused(t, s, crashKey, crashInc)
			case err == nil && string(got) != string(crashValue()):
				t.Fatalf("unanswered tombstone left the record half-written: %d bytes", len(got))
			}
		})
	}
}

// A tombstone for an absent record cut at each step of raising its floor:
// answered STALE_VERSION only after the floor's directory fsync, and then
// the incarnation stays refused after the power comes back.
func TestPowerLossTombstoneFloor(t *testing.T) {
	for _, point := range withAfterReturn(FloorCrashPoints) {
		t.Run(pointName(point), func(t *testing.T) {
			s, acked := cutMark(t, point, "tombstone.floor.after-dir-fsync", false, api.AckStaleVersion, (*Store).BatchMarkDeleted)
			if acked {
				wantRefused(t, s, crashKey, crashInc)
			}
		})
	}
}

// A GC round cut at each of its crash points, and right after the pass
// returned, for a merge round and an unlink-only one: after the power
// comes back every live record reads back byte-identical, no deleted one
// is visible or accepts a late write, fsck is clean, and the next pass
// reclaims every dead byte without losing anything.
func TestPowerLossGC(t *testing.T) {
	for _, scenario := range []string{"merge", "unlink"} {
		for _, point := range withAfterReturn(GCCrashPoints) {
			onPath := point == "" || scenario == "merge" || strings.HasPrefix(point, "gc.floor.") ||
				slices.Index(GCCrashPoints, point) >= slices.Index(GCCrashPoints, "gc.after-commit-tmp")
			if !onPath {
				continue // an unlink-only round has no target steps
			}
			t.Run(scenario+"/"+pointName(point), func(t *testing.T) {
				dir := t.TempDir()
				pl := newPowerLoss(t, dir)
				f := newGCFixtureAt(t, dir, StoreOptions{FS: pl})
				gcCrashScenarios[scenario](f)
				hit := cutAtPoint(t, pl, point)
				newGCWorker(f.s, testGCOptions(), nil).pass()
				if point != "" && !hit.Load() {
					t.Fatalf("%s was not hit", point)
				}
				if point == "" && (f.s.GCStats().Rounds == 0 || f.s.GCStats().LastError != "") {
					t.Fatalf("no clean round ran: %+v", f.s.GCStats())
				}
				powerCut(t, f.s, pl)
				wantCleanInspect(t, dir, "after the cut")

				f.s = openT(t, dir, StoreOptions{BucketKeysLimit: 4})
				f.check()
				newGCWorker(f.s, testGCOptions(), nil).pass()
				if u := f.s.Usage(); u.DeadBytes != 0 || f.s.GCStats().CleanupPending {
					t.Fatalf("after a cut at %s the next pass left %+v, %+v", pointName(point), u, f.s.GCStats())
				}
				f.check()
				f.reopen(StoreOptions{})
				f.check()
			})
		}
	}
}

// A directory cut right after it was opened for the first time keeps its
// identity: the same segment id after the power comes back.
func TestPowerLossIdentity(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	s := openT(t, dir, StoreOptions{FS: pl})
	id := s.SegmentID()
	powerCut(t, s, pl)
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if s.SegmentID() != id {
		t.Fatalf("segment id %s after the cut, was %s: the identity marker was not durable", s.SegmentID(), id)
	}
}

// A space reserve created at open survives a power cut whole: reopened on
// a disk that has since filled up (too full to create it again), the
// store still holds its full reserve for the tombstones that free space.
func TestPowerLossReserve(t *testing.T) {
	const reserve = 256 << 10
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	s := openT(t, dir, StoreOptions{FS: pl, MetadataReserve: reserve})
	if st := s.SpaceStats(); !st.ReserveHeld || st.ReserveFileBytes != reserve {
		t.Fatalf("no reserve before the cut: %+v", st)
	}
	powerCut(t, s, pl)
	full := errorfs.NewFaulty(fsys.OS{})
	full.SetSpace(1<<30, reserve) // less than twice the reserve: it cannot be made again
	s = openT(t, dir, StoreOptions{FS: full, MetadataReserve: reserve})
	defer s.Close()
	if st := s.SpaceStats(); !st.ReserveHeld || st.ReserveFileBytes != reserve {
		t.Fatalf("after the cut on a full disk the reserve is %+v, want %d bytes held", st, reserve)
	}
}

// The segment ids a holder recorded for its cluster survive a power cut
// right after SetKnownSegments returned: a rebuild after the masters are
// lost reads them to find holders nobody named.
func TestPowerLossKnownSegments(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	s := openT(t, dir, StoreOptions{FS: pl})
	if err := s.BindCluster(7); err != nil {
		t.Fatal(err)
	}
	want := []api.SegmentID{"seg-a", "seg-b", s.SegmentID()}
	if err := s.SetKnownSegments(7, want); err != nil {
		t.Fatal(err)
	}
	powerCut(t, s, pl)
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	got := s.KnownSegments()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("known segments after the cut: %v, want %v", got, want)
	}
}

// cutMark runs mark (BatchMarkDeleted or BatchMarkEvicted) on crashKey
// in a store that holds a bystander, and crashKey too when withRecord,
// with the power cut at point. The answer must be want exactly when
// point is "" or answeredAt. It returns the store reopened after the cut
// (the bystander checked; closed with the test) and whether the mark was
// answered.
func cutMark(t *testing.T, point, answeredAt string, withRecord bool, want api.AckOutcome, mark func(*Store, []api.LocalDeleteTask) []api.TaskResult) (*Store, bool) {
	t.Helper()
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	s := openT(t, dir, StoreOptions{FS: pl})
	if withRecord {
		mustPut(t, s, crashKey, crashInc, crashValue())
	}
	mustPut(t, s, "bystander", incN(1), []byte("stays"))
	hit := cutAtPoint(t, pl, point)
	res := mark(s, []api.LocalDeleteTask{task(s, 1, crashKey, crashInc)})
	acked := res[0].Outcome == want
	if point != "" && !hit.Load() {
		t.Fatalf("%s was not hit", point)
	}
	if acked != (point == "" || point == answeredAt) {
		t.Fatalf("cut at %s: answered %v", pointName(point), res[0].Outcome)
	}
	powerCut(t, s, pl)
	wantCleanInspect(t, dir, "after the cut")

	s = openT(t, dir, StoreOptions{})
	t.Cleanup(func() { s.Close() })
	mustGet(t, s, "bystander", incN(1), []byte("stays"))
	return s, acked
}
