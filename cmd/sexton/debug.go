package main

import (
	"encoding/hex"
	"flag"
	"fmt"

	"github.com/hashicorp/raft"

	"sexton/holder/crashpoint"
	"sexton/raftio"
)

func setupCrashPoints(*flag.FlagSet) runFunc {
	return func(*env, []string) error {
		for _, n := range crashpoint.Names() {
			fmt.Println(n)
		}
		return nil
	}
}

// debugRaftAppend appends one raw command entry to a stopped node's Raft
// log, after its last entry and in its last term. It exists so tests and
// operators can check that a node refuses an entry it cannot apply: a node
// restarted on such a log halts at that entry instead of skipping it.
func debugRaftAppend(args []string) error {
	fs := newFlags("debug raft-append")
	dir := fs.String("data-dir", "", "a stopped master's data dir")
	hexData := fs.String("hex", "", "entry bytes in hex (type byte + body)")
	storeKind := fs.String("raft-log-store", "", "boltdb or wal; unset, the kind the data dir holds")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	data, err := hex.DecodeString(*hexData)
	if err != nil || *dir == "" {
		return usagef("--data-dir DIR and --hex BYTES are required")
	}
	store, err := raftio.OpenLogStore(*dir, raftio.LogStoreOptions{Kind: *storeKind}, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	logs := store.Logs
	last, err := logs.LastIndex()
	if err != nil {
		return err
	}
	var prev raft.Log
	if err := logs.GetLog(last, &prev); err != nil {
		return fmt.Errorf("read last entry %d: %w", last, err)
	}
	entry := &raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand, Data: data}
	if err := logs.StoreLog(entry); err != nil {
		return err
	}
	fmt.Printf("appended entry %d (term %d, %d bytes)\n", entry.Index, entry.Term, len(data))
	return nil
}
