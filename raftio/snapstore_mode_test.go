package raftio

import (
	"os"
	"path/filepath"
	"testing"

	"sexton/internal/fsys"
)

// TestSnapshotStoreFilesAreOwnerOnly: a snapshot holds the grant key, so
// the store's directory is 0700 and its files 0600 (docs/SECURITY.md,
// "What snapshots contain").
func TestSnapshotStoreFilesAreOwnerOnly(t *testing.T) {
	dataDir := t.TempDir()
	s := openTestSnapStore(t, fsys.OS{}, dataDir, 2)
	id := mustPutSnap(t, s, 1, 10, []byte("state with a grant key"))
	dir := filepath.Join(dataDir, "snapshots")
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want drwx------", dir, st.Mode().Perm())
	}
	for _, name := range []string{id + ".state", id + ".meta"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", name, st.Mode().Perm())
		}
	}
}
