package master

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openWithin is OpenLogStore failing the test if it has not returned
// within d.
func openWithin(t *testing.T, dir, kind string, d time.Duration) (*LogStore, error) {
	t.Helper()
	type opened struct {
		st  *LogStore
		err error
	}
	done := make(chan opened, 1)
	go func() {
		st, err := OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil)
		done <- opened{st, err}
	}()
	select {
	case o := <-done:
		return o.st, o.err
	case <-time.After(d):
		t.Fatalf("OpenLogStore(%s) still blocked after %v (a lock of the previous open still held?)", kind, d)
		return nil, nil
	}
}

// TestOpenLogStoreRefusesTheOtherKind: a data dir that holds one kind of
// log store is never opened as the other (which would start the node with
// an empty log beside its real one), while a fresh dir, an empty raft-wal/
// and reopening the same kind are fine.
func TestOpenLogStoreRefusesTheOtherKind(t *testing.T) {
	for _, tc := range []struct{ first, second string }{
		{LogStoreBoltDB, LogStoreWAL},
		{LogStoreWAL, LogStoreBoltDB},
	} {
		t.Run(tc.first+"-then-"+tc.second, func(t *testing.T) {
			dir := t.TempDir()
			st, err := OpenLogStore(dir, LogStoreOptions{Kind: tc.first}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Stable.SetUint64([]byte("CurrentTerm"), 7); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenLogStore(dir, LogStoreOptions{Kind: tc.second}, nil); !errors.Is(err, ErrOtherLogStore) {
				t.Fatalf("opened a %s store over a %s one: err = %v", tc.second, tc.first, err)
			}
			// In the same process: raft-wal's own Close left its metadata
			// db locked, and this reopen hung (bounded here, not by the
			// test binary's timeout).
			st, err = openWithin(t, dir, tc.first, 10*time.Second)
			if err != nil {
				t.Fatalf("reopen as %s: %v", tc.first, err)
			}
			defer st.Close()
			if term, err := st.Stable.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
				t.Fatalf("term after reopen = %d, %v; want 7", term, err)
			}
		})
	}
	t.Run("empty-wal-dir", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "raft-wal"), 0o755); err != nil {
			t.Fatal(err)
		}
		st, err := OpenLogStore(dir, LogStoreOptions{Kind: LogStoreBoltDB}, nil)
		if err != nil {
			t.Fatalf("an empty raft-wal/ refused boltdb: %v", err)
		}
		st.Close()
	})
}
