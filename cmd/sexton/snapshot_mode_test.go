package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotSaveFileIsOwnerOnly: the file operator snapshot save writes
// holds the grant key, so it is mode 0600 whatever the umask lets through,
// also when it replaces a world-readable file or a leftover FILE.tmp.
func TestSnapshotSaveFileIsOwnerOnly(t *testing.T) {
	c, _ := devCluster(t)
	snap := filepath.Join(t.TempDir(), "saved.snap")
	for _, p := range []string{snap, snap + ".tmp"} {
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := captureStdout(t, func() error {
		return run([]string{"operator", "snapshot", "save", snap, "--masters", c.MasterAddr()})
	}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(snap)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Size() <= 3 {
		t.Fatalf("saved snapshot: mode %v, %d bytes; want -rw------- and the snapshot", st.Mode().Perm(), st.Size())
	}
	if _, err := os.Stat(snap + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("FILE.tmp left behind: %v", err)
	}
}
