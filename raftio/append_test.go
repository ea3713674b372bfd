package raftio

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// TestAppendCommandGoesAfterTheLastEntryInItsTerm: on either log store,
// AppendCommand writes a command entry at the next index in the last
// entry's term, and the entries before it stay as they were.
func TestAppendCommandGoesAfterTheLastEntryInItsTerm(t *testing.T) {
	for _, kind := range []string{LogStoreBoltDB, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			st, err := OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Logs.StoreLogs([]*raft.Log{
				{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("conf")},
				{Index: 2, Term: 3, Type: raft.LogCommand, Data: []byte("cmd")},
			}); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			entry, err := AppendCommand(dir, "", []byte{0xff, 1})
			if err != nil {
				t.Fatal(err)
			}
			if entry.Index != 3 || entry.Term != 3 || entry.Type != raft.LogCommand {
				t.Errorf("appended index %d term %d type %v, want 3, 3, a command", entry.Index, entry.Term, entry.Type)
			}
			st, err = OpenLogStore(dir, LogStoreOptions{Kind: kind}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var got raft.Log
			if err := st.Logs.GetLog(3, &got); err != nil {
				t.Fatal(err)
			}
			if got.Term != 3 || !bytes.Equal(got.Data, []byte{0xff, 1}) {
				t.Errorf("stored entry 3: term %d data %x, want term 3 data ff01", got.Term, got.Data)
			}
			if err := st.Logs.GetLog(2, &got); err != nil || string(got.Data) != "cmd" {
				t.Errorf("entry 2 after the append: %q, %v; want \"cmd\"", got.Data, err)
			}
		})
	}
}
