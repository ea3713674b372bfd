package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"sexton/jsonout"
)

// TestVersion: `sexton version`, `--version` and `version --json` name the
// same build, with the runtime's Go version.
func TestVersion(t *testing.T) {
	text, err := captureStdout(t, func() error { return run([]string{"version"}) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), "sexton ") || !strings.Contains(string(text), runtime.Version()) {
		t.Fatalf("sexton version printed %q, want \"sexton VERSION (commit ..., %s...)\"", text, runtime.Version())
	}
	flagForm, err := captureStdout(t, func() error { return run([]string{"--version"}) })
	if err != nil || string(flagForm) != string(text) {
		t.Fatalf("sexton --version = %q, %v; want what sexton version prints, %q", flagForm, err, text)
	}
	out, err := captureStdout(t, func() error { return run([]string{"version", "--json"}) })
	if err != nil {
		t.Fatal(err)
	}
	var v jsonout.Version
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Kind != jsonout.KindVersion || v.GoVersion != runtime.Version() || v.Version == "" || v.Commit == "" {
		t.Fatalf("version --json = %+v", v)
	}
}
