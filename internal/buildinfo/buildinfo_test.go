package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

// TestOverridesWin: the -ldflags -X variables replace what the embedded
// build information says, and String shows them.
func TestOverridesWin(t *testing.T) {
	defer func(v, c, d string) { Version, Commit, Date = v, c, d }(Version, Commit, Date)
	Version, Commit, Date = "v9.8.7", "0123456789abcdef0123", "2030-01-02T03:04:05Z"
	i := Get()
	if i.Version != "v9.8.7" || i.Commit != "0123456789abcdef0123" || i.Date != "2030-01-02T03:04:05Z" || i.GoVersion != runtime.Version() {
		t.Fatalf("Get() = %+v, want the overrides and %s", i, runtime.Version())
	}
	s := i.String()
	for _, want := range []string{"v9.8.7", "commit 0123456789ab,", runtime.Version(), "built 2030-01-02T03:04:05Z"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, want it to contain %q", s, want)
		}
	}
}

// TestDefaults: without overrides a test binary still has a version and
// a commit to show (never empty), and the Go version is the runtime's.
func TestDefaults(t *testing.T) {
	i := Get()
	if i.Version == "" || i.Commit == "" || i.GoVersion != runtime.Version() {
		t.Fatalf("Get() = %+v: want a version, a commit and %s", i, runtime.Version())
	}
}
