package fsm

import (
	"slices"
	"testing"

	"sexton/snapshot"
)

// TestSnapshotSectionsHaveRows: every section of the newest format has
// the fsm's row (where it is written and restored), and every row names a
// section of it.
func TestSnapshotSectionsHaveRows(t *testing.T) {
	names := snapshot.Sections(snapshot.Format140)
	if len(names) == 0 {
		t.Fatal("format 1.4.0 has no sections")
	}
	for _, name := range names {
		if _, ok := snapshotSections[name]; !ok {
			t.Errorf("snapshot section %q has no row in snapshotSections", name)
		}
	}
	for name := range snapshotSections {
		if !slices.Contains(names, name) {
			t.Errorf("snapshotSections has a row for %q, not a section of %s", name, snapshot.Format140)
		}
	}
}
