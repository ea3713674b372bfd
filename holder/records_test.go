package holder

import (
	"testing"

	"sexton/api"
)

// Records reports live records with their size and checksum and dead ones
// as tombstoned: while the tombstoned record is still in a bucket, and
// after GC reclaimed it (from the key's tombstone floor).
func TestRecordsListLiveAndDead(t *testing.T) {
	s, dir := openTemp(t)
	mustPut(t, s, "a", incN(10), valueOf("a10", 300))
	mustPut(t, s, "a", incN(20), valueOf("a20", 400))
	mustPut(t, s, "b", incN(5), valueOf("b5", 500))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "a", incN(10))}), api.AckRemoved)
	want := []api.HolderRecord{
		{Key: "a", Incarnation: incN(10), Tombstoned: true},
		{Key: "a", Tenant: "t", Incarnation: incN(20), Size: 400, CRC32C: crc32c(valueOf("a20", 400))},
		{Key: "b", Tenant: "t", Incarnation: incN(5), Size: 500, CRC32C: crc32c(valueOf("b5", 500))},
	}
	check := func(when string) {
		t.Helper()
		got := s.Records()
		if len(got) != len(want) {
			t.Fatalf("%s: %d records %+v, want %+v", when, len(got), got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: record %d is %+v, want %+v", when, i, got[i], want[i])
			}
		}
	}
	check("after the tombstone")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{})
	check("after reopening")
	newGCWorker(s, testGCOptions(), nil).pass()
	if u := s.Usage(); u.DeadBytes != 0 {
		t.Fatalf("GC left dead bytes: %+v", u)
	}
	check("after GC reclaimed the tombstoned record")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
