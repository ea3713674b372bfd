// Package sextonbin gives deploy/check's tests the static linux sexton
// binary that goes into the image: the one `make deploy-check` built
// (SEXTON_STATIC_BIN), or, for a test run alone, one built here.
package sextonbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is the sexton repository's root directory.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("sextonbin: no caller information to find the repository")
	}
	// file is ROOT/deploy/check/internal/sextonbin/sextonbin.go.
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}

// Path returns a static (CGO_ENABLED=0) linux sexton binary.
func Path(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("SEXTON_STATIC_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "sexton")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sexton")
	build.Dir = Root(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
