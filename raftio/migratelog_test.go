package raftio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"sexton/holder/crashpoint"
)

// offlineLog is what a stopped node's data dir holds: its log store's
// kind, first and last index, and term.
type offlineLog struct {
	kind        string
	first, last uint64
	term        uint64
}

func readOfflineLog(t *testing.T, dir string) offlineLog {
	t.Helper()
	st, err := OpenLogStore(dir, LogStoreOptions{}, nil)
	if err != nil {
		t.Fatalf("open the stopped node's log store: %v", err)
	}
	defer st.Close()
	var o offlineLog
	o.kind = st.Kind
	var err1, err2, err3 error
	o.first, err1 = st.Logs.FirstIndex()
	o.last, err2 = st.Logs.LastIndex()
	o.term, err3 = st.Stable.GetUint64([]byte("CurrentTerm"))
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	return o
}

func migrate(t *testing.T, dir, to string) *MigrateLogStoreResult {
	t.Helper()
	res, err := MigrateLogStore(dir, to, time.Now(), t.Logf)
	if err != nil {
		t.Fatalf("migrate %s to %s: %v", dir, to, err)
	}
	return res
}

// writeOfflineLog gives dir a stopped node's log of kind: entries
// 1..last in term 3, compacted below first (as a snapshot leaves it),
// and the stable keys hashicorp/raft writes.
func writeOfflineLog(t *testing.T, dir, kind string, first, last uint64) offlineLog {
	t.Helper()
	st, err := OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= last; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 3, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d", i)})
	}
	err = errors.Join(st.Logs.StoreLogs(logs), st.Logs.DeleteRange(1, first-1),
		st.Stable.SetUint64([]byte("CurrentTerm"), 3), st.Stable.SetUint64([]byte("LastVoteTerm"), 3),
		st.Stable.Set([]byte("LastVoteCand"), []byte("m1")), st.Close())
	if err != nil {
		t.Fatal(err)
	}
	return offlineLog{kind: kind, first: first, last: last, term: 3}
}

// TestMigrateLogStoreRoundTrip: a stopped node's log, compacted (its
// first index above 1), moved boltdb → wal and back: after each move the
// data dir holds the other kind with the same first and last index and
// term, every entry is the same, and the old store is kept aside.
func TestMigrateLogStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	before := writeOfflineLog(t, dir, LogStoreBoltDB, 5, 40)
	for _, step := range []struct{ from, to string }{{LogStoreBoltDB, LogStoreWAL}, {LogStoreWAL, LogStoreBoltDB}} {
		res := migrate(t, dir, step.to)
		after := readOfflineLog(t, dir)
		before.kind = step.to
		if after != before {
			t.Fatalf("migrated %s → %s: %+v, want %+v", step.from, step.to, after, before)
		}
		if res.First != before.first || res.Last != before.last || res.Stable["CurrentTerm"] != "3" || res.Stable["LastVoteCand"] != "m1" {
			t.Fatalf("result %+v, log was %+v", res, before)
		}
		st, err := OpenLogStore(dir, LogStoreOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var l raft.Log
		err = st.Logs.GetLog(before.last, &l)
		st.Close()
		if err != nil || string(l.Data) != fmt.Sprintf("entry %d", before.last) {
			t.Fatalf("entry %d after the move to %s: %q, %v", before.last, step.to, l.Data, err)
		}
		if !strings.HasPrefix(filepath.Base(res.Aside), filepath.Base(StorePath(dir, step.from))+".migrated-") {
			t.Fatalf("old store kept at %s", res.Aside)
		}
		if _, err := os.Stat(res.Aside); err != nil {
			t.Fatalf("old store not kept aside: %v", err)
		}
		if err := os.RemoveAll(res.Aside); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrateLogStoreCrashes: a migration that dies before its switch
// leaves the old store in force, with the log it had, and a second run
// starts over and completes; one that dies after putting the new store
// in place, before moving the old one aside, leaves a data dir a node
// refuses to open, and a second run checks the two stores are equal and
// finishes.
func TestMigrateLogStoreCrashes(t *testing.T) {
	if !crashpoint.Enabled {
		t.Skip("crash points need the testhooks build tag")
	}
	for _, point := range []string{migrateBeforeSwitch.Name(), migrateAfterNewInPlace.Name()} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			before := writeOfflineLog(t, dir, LogStoreBoltDB, 3, 20)

			type crash struct{}
			crashpoint.SetHook(func(name string) {
				if name == point {
					panic(crash{})
				}
			})
			func() {
				defer func() {
					crashpoint.SetHook(nil)
					if r := recover(); r != nil {
						if _, ok := r.(crash); !ok {
							panic(r)
						}
					}
				}()
				_, err := MigrateLogStore(dir, LogStoreWAL, time.Now(), t.Logf)
				t.Fatalf("migration passed crash point %s: %v", point, err)
			}()

			if point == migrateBeforeSwitch.Name() {
				if got := readOfflineLog(t, dir); got != before {
					t.Fatalf("after a crash before the switch the data dir holds %+v, was %+v", got, before)
				}
				if _, err := os.Stat(StorePath(dir, LogStoreWAL) + migratingSuffix); err != nil {
					t.Fatalf("the unfinished new store: %v", err)
				}
			} else {
				if _, err := OpenLogStore(dir, LogStoreOptions{}, nil); !errors.Is(err, ErrOtherLogStore) || !strings.Contains(err.Error(), MigrateLogStoreCommand) {
					t.Fatalf("opening a data dir holding both stores: %v; want ErrOtherLogStore naming the migration", err)
				}
			}

			res := migrate(t, dir, LogStoreWAL)
			if finished := point == migrateAfterNewInPlace.Name(); res.Finished != finished {
				t.Fatalf("second run: Finished %v, want %v", res.Finished, finished)
			}
			if _, err := os.Stat(StorePath(dir, LogStoreWAL) + migratingSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the unfinished new store is still there: %v", err)
			}
			before.kind = LogStoreWAL
			if after := readOfflineLog(t, dir); after != before {
				t.Fatalf("after the second run: %+v, want %+v", after, before)
			}
		})
	}
}

// TestMigrateLogStoreRefuses: a store held open (a running node), a data
// dir already on the kind asked, one without a log, and a stable key
// hashicorp/raft does not write are refused, the data dir unchanged.
func TestMigrateLogStoreRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := MigrateLogStore(dir, LogStoreWAL, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "no Raft log") {
		t.Fatalf("empty data dir: %v", err)
	}
	if _, err := MigrateLogStore(dir, "sqlite", time.Now(), nil); err == nil {
		t.Fatalf("--to sqlite accepted")
	}
	st, err := OpenLogStore(dir, LogStoreOptions{Kind: LogStoreBoltDB}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Logs.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("entry 1")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Stable.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateLogStore(dir, LogStoreWAL, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "stop the node") {
		t.Fatalf("migrating a store held open: %v", err)
	}
	if err := st.Stable.Set([]byte("SomethingElse"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := MigrateLogStore(dir, LogStoreBoltDB, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("migrating boltdb to boltdb: %v", err)
	}
	if _, err := MigrateLogStore(dir, LogStoreWAL, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "SomethingElse") {
		t.Fatalf("an unknown stable key: %v", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != BoltDBFileName {
		t.Fatalf("a refused migration left %v", ents)
	}
}
