package main

import (
	"encoding/hex"
	"fmt"

	"sexton/holder/crashpoint"
	"sexton/raftio"
)

func runCrashPoints(*env, []string) error {
	for _, n := range crashpoint.Names() {
		fmt.Println(n)
	}
	return nil
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
	entry, err := raftio.AppendCommand(*dir, *storeKind, data)
	if err != nil {
		return err
	}
	fmt.Printf("appended entry %d (term %d, %d bytes)\n", entry.Index, entry.Term, len(data))
	return nil
}
