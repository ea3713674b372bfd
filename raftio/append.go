package raftio

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// AppendCommand appends one raw command entry to the Raft log of a
// stopped node's data dir, after its last entry and in its last term
// (`sexton debug raft-append`): tests and operators check with it that a
// node refuses an entry it cannot apply. kind is as in LogStoreOptions.
// It returns the entry written.
func AppendCommand(dir, kind string, data []byte) (*raft.Log, error) {
	store, err := OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	logs := store.Logs
	last, err := logs.LastIndex()
	if err != nil {
		return nil, err
	}
	var prev raft.Log
	if err := logs.GetLog(last, &prev); err != nil {
		return nil, fmt.Errorf("read last entry %d: %w", last, err)
	}
	entry := &raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand, Data: data}
	if err := logs.StoreLog(entry); err != nil {
		return nil, err
	}
	return entry, nil
}
