package master

import (
	"testing"

	"sexton/raftio"
)

// openTestSnapStore opens a stopped node's snapshot store in dataDir.
func openTestSnapStore(t testing.TB, dataDir string) *raftio.SnapshotStore {
	t.Helper()
	s, err := raftio.OpenSnapshotStore(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
