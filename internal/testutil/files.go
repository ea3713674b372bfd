package testutil

import (
	"os"
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
