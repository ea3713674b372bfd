package main

import (
	"flag"
	"fmt"
	"sort"
	"time"

	"sexton/raftio"
)

// setupRaftMigrateLogStore is `operator raft migrate-log-store`: offline,
// on one stopped master's data dir (raftio.MigrateLogStore).
func setupRaftMigrateLogStore(fs *flag.FlagSet) runFunc {
	dir := fs.String("data-dir", "", "the stopped master's data dir")
	to := fs.String("to", "", "the log store to move to: wal or boltdb")
	return func(_ *env, _ []string) error {
		if *dir == "" || *to == "" {
			return usagef("--data-dir DIR and --to wal|boltdb are required")
		}
		res, err := raftio.MigrateLogStore(*dir, *to, time.Now(), func(format string, args ...any) {
			fmt.Printf(format+"\n", args...)
		})
		if err != nil {
			return fmt.Errorf("migrate-log-store: %w", err)
		}
		if res.Finished {
			fmt.Printf("%s already held the %s log, the same as the %s one: finished the earlier migration\n", *dir, res.To, res.From)
		}
		if res.Last == 0 {
			fmt.Printf("log: empty\n")
		} else {
			fmt.Printf("log: entries %d..%d, verified in the %s store\n", res.First, res.Last, res.To)
		}
		keys := make([]string, 0, len(res.Stable))
		for k := range res.Stable {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Printf("stable: %s = %q\n", k, res.Stable[k])
		}
		fmt.Printf("%s now keeps its Raft log in %s; the %s store is kept at %s (delete it once the node runs well)\n", *dir, res.To, res.From, res.Aside)
		return nil
	}
}
