package master

import (
	"bytes"
	"testing"

	"sexton/fsm"
	"sexton/snapshot"
)

// requireSnapshotSettings skips the rest of a test while the fsm still
// writes snapshots that carry no settings (before format 1.2.0).
func requireSnapshotSettings(t *testing.T) {
	t.Helper()
	var buf bytes.Buffer
	v := fsm.New(fsm.Config{}).Snapshot()
	_, err := v.WriteTo(&buf)
	v.Release()
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := snapshot.Inspect(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format == snapshot.Format110 {
		t.Skip("the fsm writes 1.1.0 snapshots, which carry no settings")
	}
}
