package raftio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
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

// TestOpenLogStoreDefault: without --raft-log-store a new data dir gets
// raft-wal, one holding raft.db keeps boltdb and one holding raft-wal/
// keeps wal, with the log found there; a kind given that contradicts the
// data dir, or a data dir holding both, is refused naming the migration,
// and nothing is created beside the log.
func TestOpenLogStoreDefault(t *testing.T) {
	newDir := t.TempDir()
	st, err := OpenLogStore(newDir, LogStoreOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != LogStoreWAL {
		t.Fatalf("new data dir opened as %q, want %s", st.Kind, LogStoreWAL)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(newDir, BoltDBFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a new data dir on raft-wal has %s: %v", BoltDBFileName, err)
	}

	for _, kind := range []string{LogStoreBoltDB, LogStoreWAL} {
		t.Run("existing-"+kind, func(t *testing.T) {
			dir := t.TempDir()
			st, err := OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Logs.StoreLogs([]*raft.Log{walEntry(1), walEntry(2)}); err != nil {
				t.Fatal(err)
			}
			st.Close()

			st, err = OpenLogStore(dir, LogStoreOptions{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Kind != kind {
				t.Fatalf("data dir holding %s opened as %q without the flag", kind, st.Kind)
			}
			if last, err := st.Logs.LastIndex(); err != nil || last != 2 {
				t.Fatalf("last index %d, %v; want 2: not the log on disk", last, err)
			}
			st.Close()

			other := LogStoreWAL
			if kind == LogStoreWAL {
				other = LogStoreBoltDB
			}
			_, err = OpenLogStore(dir, LogStoreOptions{Kind: other}, nil)
			if !errors.Is(err, ErrOtherLogStore) || !strings.Contains(err.Error(), MigrateLogStoreCommand) {
				t.Fatalf("--raft-log-store %s over a %s log: err = %v; want ErrOtherLogStore naming %q", other, kind, err, MigrateLogStoreCommand)
			}
			if got, err := DetectLogStore(dir); err != nil || got != kind {
				t.Fatalf("after the refusal the data dir holds %q (%v), want only %s", got, err, kind)
			}
		})
	}

	t.Run("both", func(t *testing.T) {
		dir := t.TempDir()
		for _, kind := range []string{LogStoreBoltDB, LogStoreWAL} {
			st, err := OpenLogStoreAt(kind, StorePath(dir, kind), 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
		}
		for _, kind := range []string{"", LogStoreBoltDB, LogStoreWAL} {
			if _, err := OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil); !errors.Is(err, ErrOtherLogStore) || !strings.Contains(err.Error(), MigrateLogStoreCommand) {
				t.Fatalf("kind %q on a data dir holding both: err = %v", kind, err)
			}
		}
	})
}
