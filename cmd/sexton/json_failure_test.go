package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sexton/jsonout"
)

// TestJSONOnFailure runs every verb that takes --json so that it fails,
// in part where the verb acts on several keys, against a one-process
// cluster (or, for the verbs that ask the cluster one thing, a master
// that is not there). Each must print exactly one JSON value on stdout
// and still return an error (a non-zero exit): rm's per-key results, or
// the error object. A --json verb without a case here fails the test.
func TestJSONOnFailure(t *testing.T) {
	c, live := devCluster(t)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()
	dead := []string{"--masters", deadAddr, "--timeout", "300ms"}

	value := valueFile(t, []byte("hello"))
	for _, k := range []string{"a/3", "a/4"} {
		if _, err := captureStdout(t, func() error { return run(append([]string{"put", k, value}, live...)) }); err != nil {
			t.Fatal(err)
		}
	}
	batch := filepath.Join(dir, "batch")
	if err := os.WriteFile(batch, []byte("a/4\nnosuch2\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	type failCase struct {
		args     []string // after the verb's words; --json is added
		stdin    string   // a file to read stdin from
		kind     string   // "error": the error object; "": the verb's own object
		failed   int      // for rm: keys failed
		code     string   // the error object's code, or the failed key's
		exitZero bool     // the verb succeeds in part and says so with exit 0
	}
	cases := map[string][]failCase{
		"put": {{args: append([]string{"a/3", value, "--if-absent"}, live...), kind: jsonout.KindError, code: "OBJECT_ALREADY_EXISTS"}},
		"rm": {{args: append([]string{"a/3", "nosuch"}, live...), failed: 1, code: "OBJECT_NOT_FOUND"},
			{args: append([]string{"--batch", "-"}, live...), stdin: batch, failed: 1, code: "OBJECT_NOT_FOUND"}},
		"stat": {{args: append([]string{"nosuch"}, live...), kind: jsonout.KindError, code: "OBJECT_NOT_FOUND"}},
		"ls":   {{args: dead, kind: jsonout.KindError}},
		// One master answers, one does not: its row is printed, the other on stderr.
		"status":                    {{args: []string{"--masters", c.MasterAddr() + "," + deadAddr, "--timeout", "300ms"}, exitZero: true}, {args: dead}},
		"operator raft list-peers":  {{args: dead, kind: jsonout.KindError}},
		"operator snapshot inspect": {{args: []string{filepath.Join(dir, "no-such-snapshot")}, kind: jsonout.KindError}},
		"operator tasks":            {{args: dead, kind: jsonout.KindError}},
		"operator segments":         {{args: dead, kind: jsonout.KindError}},
		"operator fsck":             {{args: dead, kind: jsonout.KindError}},
		"operator rebuild":          {{args: append([]string{"--dry-run"}, dead...), kind: jsonout.KindError}},
		"operator dfs status":       {{args: dead, kind: jsonout.KindError}},
		"operator settings":         {{args: dead, kind: jsonout.KindError}},
		"operator jobs":             {{args: dead, kind: jsonout.KindError}},
		"operator settings set":     {{args: append([]string{"--registry-capacity", "40000"}, dead...), kind: jsonout.KindError}},
		"holder inspect":            {{args: []string{value}, kind: jsonout.KindError}},
	}
	// Verbs that cannot fail once their command line parsed.
	cannotFail := map[string]string{
		"version":                 "reads this binary's build information only",
		"operator token generate": "reads the system's random source only",
	}

	for _, v := range verbs {
		if v.takes&jsonFlag == 0 {
			continue
		}
		cs, ok := cases[v.path]
		if !ok {
			if _, ok := cannotFail[v.path]; !ok {
				t.Errorf("%q takes --json but has no failure case in TestJSONOnFailure", v.path)
			}
			continue
		}
		for _, tc := range cs {
			args := append(append(strings.Fields(v.path), tc.args...), "--json")
			name := strings.Join(args, " ")
			if tc.stdin != "" {
				f, err := os.Open(tc.stdin)
				if err != nil {
					t.Fatal(err)
				}
				old := os.Stdin
				os.Stdin = f
				defer func() { os.Stdin = old; f.Close() }()
			}
			out, err := captureStdout(t, func() error { return run(args) })
			if (err == nil) != tc.exitZero {
				t.Errorf("%s: error %v, want an error %v", name, err, !tc.exitZero)
			}
			if err != nil && exitCode(err) == exitUsage {
				t.Errorf("%s: a usage error (%v): the case must reach the request", name, err)
				continue
			}
			got := assertContract(t, name, out)
			obj, _ := got.(map[string]any)
			switch {
			case tc.kind == jsonout.KindError:
				if obj == nil || obj["kind"] != jsonout.KindError || obj["error"] == "" || obj["exit_status"] != float64(exitCode(err)) {
					t.Errorf("%s: want the error object exiting %d, got %s", name, exitCode(err), out)
				} else if tc.code != "" && obj["code"] != tc.code {
					t.Errorf("%s: code %v, want %s", name, obj["code"], tc.code)
				}
			case tc.failed > 0:
				keys, _ := obj["keys"].([]any)
				if obj == nil || obj["failed"] != float64(tc.failed) || len(keys) != 2 {
					t.Errorf("%s: want %d failed of 2 keys, got %s", name, tc.failed, out)
					continue
				}
				first, _ := keys[0].(map[string]any)
				second, _ := keys[1].(map[string]any)
				if first["ok"] != true || second["ok"] != false || second["code"] != tc.code || obj["removed"] != float64(1) {
					t.Errorf("%s: want the first key removed, the second failed with %s, got %s", name, tc.code, out)
				}
			}
		}
	}
}
