package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// FlipMiddleBits XORs mask into the middle byte of the file at path, in
// place: a corruption a checksum over the file must catch.
func FlipMiddleBits(t testing.TB, path string, mask byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty: no byte to flip", path)
	}
	b[len(b)/2] ^= mask
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// DirContents is every file of dir by name, with its bytes as a string:
// a directory's state to compare before and after an operation, or
// against the files a test expects.
func DirContents(t testing.TB, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}
