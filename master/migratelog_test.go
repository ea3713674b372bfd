package master

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
	"sexton/raftio"
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
	st, err := raftio.OpenLogStore(dir, raftio.LogStoreOptions{}, nil)
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

// TestMigrateLogStoreRoundTrip: a master's data dir, with a log that a
// snapshot has compacted (its first index above 1), moved boltdb → wal
// and back while the master is stopped: after each move the data dir
// holds the other kind with the same first and last index and term, the
// old store is kept aside, and the master started without
// --raft-log-store opens the new store and has every object.
func TestMigrateLogStoreRoundTrip(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) {
		c.LogStore = raftio.LogStoreBoltDB
		c.TrailingLogs = 4
	})
	tc.mountHolder(t, "seg-a", "")
	var keys []string
	put := func(n int) {
		for range n {
			k := fmt.Sprintf("k%03d", len(keys))
			tc.put(t, k, 10, 1)
			keys = append(keys, k)
		}
	}
	put(10)
	if err := tc.node(0).raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	put(5)
	dir := tc.cfgs[0].DataDir

	restartOn := func(want string) {
		t.Helper()
		tc.cfgs[0].LogStore = ""
		tc.start(0)
		tc.waitLeader(t)
		for _, k := range keys {
			if _, err := tc.get(k); err != nil {
				t.Fatalf("after the migration to %s: get %s: %v", want, k, err)
			}
		}
		put(1) // and it appends
	}

	for _, step := range []struct{ from, to string }{{raftio.LogStoreBoltDB, raftio.LogStoreWAL}, {raftio.LogStoreWAL, raftio.LogStoreBoltDB}} {
		tc.stop(0)
		before := readOfflineLog(t, dir)
		if before.kind != step.from || before.first <= 1 || before.last <= before.first || before.term == 0 {
			t.Fatalf("before the migration to %s: %+v; want a %s log compacted past index 1", step.to, before, step.from)
		}
		res := migrate(t, dir, step.to)
		after := readOfflineLog(t, dir)
		if after != (offlineLog{kind: step.to, first: before.first, last: before.last, term: before.term}) {
			t.Fatalf("migrated %s → %s: %+v, was %+v", step.from, step.to, after, before)
		}
		if res.First != before.first || res.Last != before.last || res.Stable["CurrentTerm"] != fmt.Sprint(before.term) {
			t.Fatalf("result %+v, log was %+v", res, before)
		}
		if !strings.HasPrefix(filepath.Base(res.Aside), filepath.Base(raftio.StorePath(dir, step.from))+".migrated-") {
			t.Fatalf("old store kept at %s", res.Aside)
		}
		if _, err := os.Stat(res.Aside); err != nil {
			t.Fatalf("old store not kept aside: %v", err)
		}
		restartOn(step.to)
		if got := tc.node(0).raft.LastIndex(); got <= before.last {
			t.Fatalf("after the migration to %s raft's last index is %d, the log's was %d", step.to, got, before.last)
		}
	}
	if !strings.Contains(tc.logs.String(), "data dir has raft.db: keeping the boltdb log store") {
		t.Fatalf("a master started without --raft-log-store on raft.db did not say it keeps boltdb")
	}
}

// TestMigrateLogStoreCrashes: a migration that dies before its switch
// leaves the old store in force, with the log it had (the master opens
// it), and a second run starts over and completes; one that dies after
// putting the new store in place, before moving the old one aside,
// leaves a data dir a master refuses to start on, and a second run
// checks the two stores are equal and finishes.
func TestMigrateLogStoreCrashes(t *testing.T) {
	if !crashpoint.Enabled {
		t.Skip("crash points need the testhooks build tag")
	}
	for _, point := range []string{migrateBeforeSwitch.Name(), migrateAfterNewInPlace.Name()} {
		t.Run(point, func(t *testing.T) {
			tc := startCluster(t, 1, func(c *Config) { c.LogStore = raftio.LogStoreBoltDB })
			tc.mountHolder(t, "seg-a", "")
			tc.put(t, "k", 10, 1)
			tc.stop(0)
			dir := tc.cfgs[0].DataDir
			before := readOfflineLog(t, dir)

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
				_, err := MigrateLogStore(dir, raftio.LogStoreWAL, time.Now(), t.Logf)
				t.Fatalf("migration passed crash point %s: %v", point, err)
			}()

			if point == migrateBeforeSwitch.Name() {
				if got := readOfflineLog(t, dir); got != before {
					t.Fatalf("after a crash before the switch the data dir holds %+v, was %+v", got, before)
				}
				if _, err := os.Stat(raftio.StorePath(dir, raftio.LogStoreWAL) + migratingSuffix); err != nil {
					t.Fatalf("the unfinished new store: %v", err)
				}
				tc.cfgs[0].LogStore = ""
				tc.start(0)
				tc.waitLeader(t)
				if _, err := tc.get("k"); err != nil {
					t.Fatalf("the old store in force: get k: %v", err)
				}
				tc.stop(0)
				before = readOfflineLog(t, dir)
			} else {
				if _, err := raftio.OpenLogStore(dir, raftio.LogStoreOptions{}, nil); !errors.Is(err, raftio.ErrOtherLogStore) || !strings.Contains(err.Error(), raftio.MigrateLogStoreCommand) {
					t.Fatalf("opening a data dir holding both stores: %v; want raftio.ErrOtherLogStore naming the migration", err)
				}
			}

			res := migrate(t, dir, raftio.LogStoreWAL)
			if finished := point == migrateAfterNewInPlace.Name(); res.Finished != finished {
				t.Fatalf("second run: Finished %v, want %v", res.Finished, finished)
			}
			if _, err := os.Stat(raftio.StorePath(dir, raftio.LogStoreWAL) + migratingSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the unfinished new store is still there: %v", err)
			}
			after := readOfflineLog(t, dir)
			if after.kind != raftio.LogStoreWAL || after.first != before.first || after.last != before.last || after.term != before.term {
				t.Fatalf("after the second run: %+v, was %+v", after, before)
			}
			tc.cfgs[0].LogStore = ""
			tc.start(0)
			tc.waitLeader(t)
			if _, err := tc.get("k"); err != nil {
				t.Fatalf("after the migration: get k: %v", err)
			}
		})
	}
}

// TestMigrateLogStoreRefuses: a store held open (a running node), a data
// dir already on the kind asked, one without a log, and a stable key
// hashicorp/raft does not write are refused, the data dir unchanged.
func TestMigrateLogStoreRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := MigrateLogStore(dir, raftio.LogStoreWAL, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "no Raft log") {
		t.Fatalf("empty data dir: %v", err)
	}
	if _, err := MigrateLogStore(dir, "sqlite", time.Now(), nil); err == nil {
		t.Fatalf("--to sqlite accepted")
	}
	st, err := raftio.OpenLogStore(dir, raftio.LogStoreOptions{Kind: raftio.LogStoreBoltDB}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Logs.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("entry 1")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Stable.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateLogStore(dir, raftio.LogStoreWAL, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "stop the node") {
		t.Fatalf("migrating a store held open: %v", err)
	}
	if err := st.Stable.Set([]byte("SomethingElse"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := MigrateLogStore(dir, raftio.LogStoreBoltDB, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("migrating boltdb to boltdb: %v", err)
	}
	if _, err := MigrateLogStore(dir, raftio.LogStoreWAL, time.Now(), nil); err == nil || !strings.Contains(err.Error(), "SomethingElse") {
		t.Fatalf("an unknown stable key: %v", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != raftio.BoltDBFileName {
		t.Fatalf("a refused migration left %v", ents)
	}
}
