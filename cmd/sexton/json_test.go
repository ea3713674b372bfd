package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sexton/devcluster"
	"sexton/jsonout"
)

// devCluster starts a one-process cluster in a temporary directory,
// closed when the test ends, and returns it with the --masters flag that
// reaches it.
func devCluster(t *testing.T) (*devcluster.Cluster, []string) {
	t.Helper()
	// The dev cluster picks free loopback ports and binds them later;
	// another test process can take one in between, so a bind refused
	// that way is tried again on new ports.
	var c *devcluster.Cluster
	var err error
	for range 3 {
		if c, err = devcluster.Start(devcluster.Config{Dir: t.TempDir()}); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, []string{"--masters", c.MasterAddr()}
}

// valueFile writes value to a file in a temporary directory and returns
// its path, for put.
func valueFile(t *testing.T, value []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "value")
	if err := os.WriteFile(p, value, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// captureStdout runs f with os.Stdout redirected and returns what it printed.
func captureStdout(t *testing.T, f func() error) ([]byte, error) {
	t.Helper()
	return captureFile(t, &os.Stdout, f)
}

// captureStderr runs f with os.Stderr redirected and returns what it printed.
func captureStderr(t *testing.T, f func() error) ([]byte, error) {
	t.Helper()
	return captureFile(t, &os.Stderr, f)
}

func captureFile(t *testing.T, file **os.File, f func() error) ([]byte, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *file
	*file = w
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	ferr := f()
	*file = old
	w.Close()
	out := <-got
	r.Close()
	return out, ferr
}

// assertContract decodes out as exactly one JSON value (nothing else on
// stdout) and walks it: snake_case keys at every depth, no null anywhere.
// It walks independently of printJSON's own check.
func assertContract(t *testing.T, name string, out []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: stdout is not JSON: %v\n%s", name, err, out)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) > 0 {
		t.Fatalf("%s: more than one JSON value on stdout: %q", name, rest)
	}
	var walk func(path string, x any)
	walk = func(path string, x any) {
		switch x := x.(type) {
		case nil:
			t.Errorf("%s: %s is null", name, path)
		case map[string]any:
			for k, e := range x {
				if !snake.MatchString(k) || strings.Contains(k, "__") || strings.HasSuffix(k, "_") {
					t.Errorf("%s: %s: key %q is not snake_case", name, path, k)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		}
	}
	walk("$", v)
	return v
}

// TestJSONOutputOfEveryVerb runs every verb that takes --json against a
// one-process cluster and checks what it prints. A verb added to the
// table with --json and no case here fails the test.
func TestJSONOutputOfEveryVerb(t *testing.T) {
	dir := t.TempDir()
	c, err := devcluster.Start(devcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	m := []string{"--masters", c.MasterAddr()}
	value := valueFile(t, []byte("hello"))
	snap := filepath.Join(dir, "snap")
	for _, args := range [][]string{
		{"put", "a/1", value}, {"put", "a/2", value}, {"put", "b/1", value}, {"rm", "b/1"}, {"put", "c/1", value},
		{"put", "b/2", value}, {"rm", "--prefix", "b/", "--wait", "30s"}, {"put", "d/1", value},
		{"operator", "snapshot", "save", snap},
	} {
		if _, err := captureStdout(t, func() error { return run(append(args, m...)) }); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}

	// Each case: the verb's words and arguments (--json and --masters are
	// added), and a key its output must have at the top level (or, for a
	// list, in its first element).
	type jsonCase struct {
		args    []string
		wantKey string
		empty   bool // the output is an empty list
	}
	cases := map[string][]jsonCase{
		"rm":                        {{args: []string{"c/1", "--wait", "10s"}, wantKey: "replicas"}, {args: []string{"--prefix", "d/", "--wait", "30s"}, wantKey: "job"}},
		"stat":                      {{args: []string{"a/1"}, wantKey: "pending_deletes"}},
		"put":                       {{args: []string{"e/1", value}, wantKey: "incarnation"}},
		"ls":                        {{args: []string{"a/"}, wantKey: "incarnation"}, {args: []string{"nothing-here/"}, empty: true}},
		"status":                    {{wantKey: "build"}},
		"version":                   {{wantKey: "go_version"}},
		"operator raft list-peers":  {{wantKey: "suffrage"}},
		"operator snapshot inspect": {{args: []string{snap}, wantKey: "last_index"}},
		"operator tasks":            {{wantKey: "total"}},
		"operator segments":         {{wantKey: "mount_epoch"}},
		"operator fsck":             {{wantKey: "segments"}},
		// A dry run: the dev cluster is not fresh, but nothing is proposed.
		"operator rebuild":        {{args: []string{"--dry-run"}, wantKey: "adopt"}},
		"operator dfs status":     {{wantKey: "stray_files"}},
		"operator settings":       {{wantKey: "settings"}, {args: []string{"show"}, wantKey: "index"}},
		"operator jobs":           {{wantKey: "jobs"}},
		"operator settings set":   {{args: []string{"--registry-capacity", "40000"}, wantKey: "settings"}},
		"operator token generate": {{wantKey: "token"}},
		// After the cluster is closed: inspect reads the directory offline.
		"holder inspect": {{args: []string{filepath.Join(dir, "holder")}, wantKey: "live_objects"}},
	}
	offline := map[string]bool{"holder inspect": true}

	check := func(v verb) {
		cs, ok := cases[v.path]
		if !ok {
			t.Errorf("%q takes --json but has no case in TestJSONOutputOfEveryVerb", v.path)
			return
		}
		for _, tc := range cs {
			args := append(strings.Fields(v.path), tc.args...)
			args = append(args, "--json")
			if v.takes&clusterFlags != 0 {
				args = append(args, m...)
			}
			out, err := captureStdout(t, func() error { return run(args) })
			if err != nil {
				t.Errorf("%v: %v\n%s", args, err, out)
				continue
			}
			got := assertContract(t, strings.Join(args[:len(args)-len(m)], " "), out)
			// Every key printed is in one of docs/CLI.md's examples of
			// the verb (which may show more: fields omitted when empty);
			// a verb with several shapes (rm, rm --prefix) shows each.
			if exs := docJSONExamples(t, v.path); len(exs) > 0 {
				documented := map[string]bool{}
				for _, ex := range exs {
					var exv any
					if err := json.Unmarshal(ex, &exv); err != nil {
						t.Errorf("docs/CLI.md: an example of %q: %v", v.path, err)
						continue
					}
					for p := range keyPaths(exv) {
						documented[p] = true
					}
				}
				for p := range keyPaths(got) {
					if !documented[p] {
						t.Errorf("%v prints %s, which docs/CLI.md's example does not show", args, p)
					}
				}
			}
			if list, ok := got.([]any); ok {
				if tc.empty != (len(list) == 0) {
					t.Errorf("%v: %d elements, want empty %v", args, len(list), tc.empty)
					continue
				}
				if tc.empty {
					continue
				}
				got = list[0]
			}
			if obj, ok := got.(map[string]any); !ok || obj[tc.wantKey] == nil {
				t.Errorf("%v: no %q in %s", args, tc.wantKey, out)
			}
		}
	}
	for _, v := range verbs {
		if v.takes&jsonFlag != 0 && !offline[v.path] {
			check(v)
		}
	}
	c.Close()
	closed = true
	for _, v := range verbs {
		if v.takes&jsonFlag != 0 && offline[v.path] {
			check(v)
		}
	}
}

// keyPaths are the object keys of v by path, list elements merged:
// {"tasks":[{"id":1}]} gives $.tasks and $.tasks[].id.
func keyPaths(v any) map[string]bool {
	out := map[string]bool{}
	var walk func(path string, x any)
	walk = func(path string, x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				out[path+"."+k] = true
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		}
	}
	walk("$", v)
	return out
}

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
