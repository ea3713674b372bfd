package master

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/raftio"
)

// TestMigrateLogStoreRestart: a master's data dir, with a log that a
// snapshot has compacted, moved boltdb → wal and back while the master is
// stopped (raftio.MigrateLogStore; its own tests check the stores): the
// master started without --raft-log-store opens the new store, has every
// object, and appends past the migrated log.
func TestMigrateLogStoreRestart(t *testing.T) {
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
	for _, to := range []string{raftio.LogStoreWAL, raftio.LogStoreBoltDB} {
		tc.stop(0)
		res, err := raftio.MigrateLogStore(dir, to, time.Now(), t.Logf)
		if err != nil {
			t.Fatalf("migrate to %s: %v", to, err)
		}
		if res.First <= 1 || res.Last <= res.First {
			t.Fatalf("migrated %+v; want a log compacted past index 1", res)
		}
		tc.cfgs[0].LogStore = ""
		tc.start(0)
		tc.waitLeader(t)
		for _, k := range keys {
			if _, err := tc.get(k); err != nil {
				t.Fatalf("after the migration to %s: get %s: %v", to, k, err)
			}
		}
		put(1)
		if got := tc.node(0).raft.LastIndex(); got <= res.Last {
			t.Fatalf("after the migration to %s raft's last index is %d, the log's was %d", to, got, res.Last)
		}
	}
	if !strings.Contains(tc.logs.String(), "data dir has raft.db: keeping the boltdb log store") {
		t.Fatalf("a master started without --raft-log-store on raft.db did not say it keeps boltdb")
	}
}
