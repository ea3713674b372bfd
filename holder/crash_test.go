//go:build testhooks

package holder

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sexton/api"
	"sexton/holder/crashpoint"
)

func TestCrashPointsAreRegistered(t *testing.T) {
	names := crashpoint.Names()
	for _, n := range slices.Concat(TombstoneCrashPoints, PutCrashPoints, PutLargeCrashPoints, PutStreamCrashPoints, PutNewBucketCrashPoints, FloorCrashPoints, CompactCrashPoints) {
		if !slices.Contains(names, n) {
			t.Errorf("%s is not registered", n)
		}
	}
}

func wantKilled(t *testing.T, point, out string, ws syscall.WaitStatus) {
	t.Helper()
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die at %s: status %v, output %q", point, ws, out)
	}
}

// TestTombstoneCrashPoints kills a holder process at every step of a
// tombstone persistence and checks what the reopened directory says:
// before the rename the old .meta is authoritative (record live), from the
// rename on the tombstone is committed (record gone, flag on disk).
func TestTombstoneCrashPoints(t *testing.T) {
	committed := map[string]bool{
		"tombstone.before-tmp-write": false,
		"tombstone.after-tmp-write":  false,
		"tombstone.after-tmp-fsync":  false,
		"tombstone.after-rename":     true,
		"tombstone.after-dir-fsync":  true,
	}
	for _, point := range TombstoneCrashPoints {
		t.Run(point, func(t *testing.T) {
			s, dir := openTemp(t)
			mustPut(t, s, crashKey, crashInc, crashValue())
			mustPut(t, s, "bystander", incN(1), []byte("stays"))
			s.Close()

			s = killAndReopen(t, dir, roleTombstone, point, "", "")
			mustGet(t, s, "bystander", incN(1), []byte("stays"))
			_, err := s.Get(crashKey, crashInc)
			if committed[point] {
				if !errors.Is(err, ErrNotFound) || !tombstonedOnDisk(t, dir, 1, crashKey, crashInc) {
					t.Fatalf("after %s: Get %v; the renamed .meta must hold the tombstone", point, err)
				}
				wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, crashKey, crashInc)}), api.AckAlreadyRemoved)
			} else {
				if err != nil || tombstonedOnDisk(t, dir, 1, crashKey, crashInc) {
					t.Fatalf("after %s: Get %v; the old .meta must stay authoritative", point, err)
				}
				// The task was never acked; its retry completes it.
				wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, crashKey, crashInc)}), api.AckRemoved)
			}
			if _, err := os.Stat(s.path(metaTmpName(1))); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("tmp metadata survived recovery: %v", err)
			}
		})
	}
	t.Run("no crash", func(t *testing.T) {
		s, dir := openTemp(t)
		mustPut(t, s, crashKey, crashInc, crashValue())
		s.Close()
		out, ws := runChildProcess(t, roleTombstone, dir, "")
		if ws.ExitStatus() != 0 || !strings.Contains(out, "[Removed]") {
			t.Fatalf("status %v output %q", ws, out)
		}
	})
}

// killAndReopen runs role on dir in a child process killed at point; an
// output containing answered (when set) is the operation answered before
// it was durable, refused as early. It returns dir reopened, closed with
// the test.
func killAndReopen(t *testing.T, dir, role, point, answered, early string) *Store {
	t.Helper()
	out, ws := runChildProcess(t, role, dir, point)
	wantKilled(t, point, out, ws)
	if answered != "" && strings.Contains(out, answered) {
		t.Fatalf("%s (crash at %s)", early, point)
	}
	s := openT(t, dir, StoreOptions{})
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPutCrashPoints kills a holder process at every step of a put into
// a new bucket: the put is never acknowledged, and after restart the
// record exists exactly when its metadata rename happened; no uncommitted
// file is left.
func TestPutCrashPoints(t *testing.T) {
	committed := map[string]bool{"put.after-meta-rename": true, "put.after-dir-fsync": true}
	for _, point := range PutNewBucketCrashPoints {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, StoreOptions{}) // marks the directory
			s.Close()

			s = killAndReopen(t, dir, rolePut, point, "ACK", "put acknowledged before it was durable")
			got, err := s.Get(crashKey, crashInc)
			if committed[point] {
				if err != nil || string(got) != string(crashValue()) {
					t.Fatalf("after %s: %v", point, err)
				}
				return
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("after %s: uncommitted put visible: %v", point, err)
			}
			if u := s.Usage(); u.Buckets != 0 || u.UsedBytes != 0 {
				t.Fatalf("after %s: uncommitted bucket kept: %+v, report %+v", point, u, s.OpenReport())
			}
			mustPut(t, s, crashKey, crashInc, crashValue()) // the writer's retry
		})
	}
	t.Run("no crash", func(t *testing.T) {
		dir := t.TempDir()
		out, ws := runChildProcess(t, rolePut, dir, "")
		if ws.ExitStatus() != 0 || !strings.Contains(out, "ACK") {
			t.Fatalf("status %v output %q", ws, out)
		}
		s := openT(t, dir, StoreOptions{})
		defer s.Close()
		mustGet(t, s, crashKey, crashInc, crashValue())
	})
}

// TestPutJournalCrashPoints kills a holder process at every step of a put
// appended to a bucket that has its .meta (the journal path), and of a
// streamed one: the put is never acknowledged; after restart the earlier
// record reads back, the record exists exactly when its journal record
// was written whole (a killed process loses no page cache), and the
// writer's retry succeeds.
func TestPutJournalCrashPoints(t *testing.T) {
	committed := map[string]bool{"put.after-journal-write": true, "put.after-journal-fsync": true}
	for _, c := range []struct {
		role   string
		points []string
		value  []byte
	}{
		{rolePut, PutCrashPoints, crashValue()},
		{roleStream, PutStreamCrashPoints, streamedCrashValue()},
	} {
		for _, point := range c.points {
			t.Run(c.role+"/"+point, func(t *testing.T) {
				s, dir := openTemp(t)
				mustPut(t, s, "earlier", incN(1), []byte("earlier bytes"))
				s.Close()

				out, ws := runChildProcess(t, c.role, dir, point)
				wantKilled(t, point, out, ws)
				if strings.Contains(out, "ACK") {
					t.Fatalf("put acknowledged before it was durable (crash at %s)", point)
				}

				s = openT(t, dir, StoreOptions{})
				defer s.Close()
				wantCleanInspectDir(t, dir)
				mustGet(t, s, "earlier", incN(1), []byte("earlier bytes"))
				got, err := s.Get(crashKey, crashInc)
				if committed[point] {
					if err != nil || !bytes.Equal(got, c.value) {
						t.Fatalf("after %s: %v", point, err)
					}
					return
				}
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("after %s: uncommitted put visible: %v", point, err)
				}
				mustPut(t, s, crashKey, crashInc, c.value) // the writer's retry
				mustGet(t, s, crashKey, crashInc, c.value)
			})
		}
	}
}

// TestTombstoneFloorCrashPoints kills a holder process at every step of
// raising the floor for a task whose record is absent. The task is never
// answered; after restart the directory opens clean, the floor exists
// exactly when its rename happened, and the task's retry answers
// StaleVersion and leaves the incarnation refused.
func TestTombstoneFloorCrashPoints(t *testing.T) {
	committed := map[string]bool{"tombstone.floor.after-rename": true, "tombstone.floor.after-dir-fsync": true}
	for _, point := range FloorCrashPoints {
		t.Run(point, func(t *testing.T) {
			s, dir := openTemp(t)
			mustPut(t, s, "bystander", incN(1), []byte("stays"))
			s.Close()

			s = killAndReopen(t, dir, roleAbsent, point, "results:", "task answered before its floor was durable")
			mustGet(t, s, "bystander", incN(1), []byte("stays"))
			if got := s.FloorEntries(); (got == 1) != committed[point] {
				t.Fatalf("after %s: floor holds %d keys", point, got)
			}
			if _, err := os.Stat(s.path(floorTmpName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("floor tmp survived recovery: %v", err)
			}
			wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, crashKey, crashInc)}), api.AckStaleVersion)
			wantRefused(t, s, crashKey, crashInc)
		})
	}
}
