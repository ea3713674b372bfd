package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sexton/api"
	"sexton/jsonout"
	"sexton/snapshot"
)

// The claims of README.md and docs/CLI.md that name something the code
// decides: these tests fail when the code moves and the document does not.

const readmePath = "../../README.md"

// headerSink keeps a snapshot's header and refuses everything after it.
type headerSink struct{ h *snapshot.Header }

func (s headerSink) Header(h snapshot.Header) error { *s.h = h; return nil }
func (headerSink) Section(string) (func(any) error, error) {
	return func(any) error { return nil }, nil
}

// writtenSnapshotFormat is the format snapshot.NewWriter writes when no
// format is asked for: what every master writes.
func writtenSnapshotFormat(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := snapshot.NewWriter(&buf, snapshot.Header{}); err != nil {
		t.Fatal(err)
	}
	var h snapshot.Header
	// The stream ends after its header, so Read fails; the header is read
	// first.
	_, _ = snapshot.Read(bytes.NewReader(buf.Bytes()), headerSink{&h})
	if h.Format == "" {
		t.Fatal("no header read back from a new snapshot writer")
	}
	return h.Format
}

// writtenFormatClaim is README's statement of the format snapshots are
// written in: "written as format 1.4.0", "writes format 1.4.0",
// "snapshot format 1.4.0".
var writtenFormatClaim = regexp.MustCompile(`(?i)(?:written (?:as|in) format|writes format|snapshot format)\s+(\d+\.\d+\.\d+)`)

// readRangeClaim is README's "reads 1.0.0 through 1.4.0".
var readRangeClaim = regexp.MustCompile(`(?i)reads\s+\d+\.\d+\.\d+\s+through\s+(\d+\.\d+\.\d+)`)

// TestReadmeNamesTheWrittenSnapshotFormat: README names the snapshot
// format this build writes, and no other as the one written or the newest
// read.
func TestReadmeNamesTheWrittenSnapshotFormat(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	want := writtenSnapshotFormat(t)
	readme := string(b)
	claims := writtenFormatClaim.FindAllStringSubmatch(readme, -1)
	if len(claims) == 0 {
		t.Fatalf("README.md names no snapshot format written (%q); the writer's is %s", writtenFormatClaim, want)
	}
	for _, c := range append(claims, readRangeClaim.FindAllStringSubmatch(readme, -1)...) {
		if c[1] != want {
			t.Errorf("README.md says %q, but snapshot.NewWriter writes format %s", c[0], want)
		}
	}
}

// printedKinds maps each JSON output type (package jsonout) that has a
// "kind" field to the values the binary can put there. A new such type
// must be added here, so that its kinds are checked too.
func printedKinds() map[string][]string {
	var replicas []string
	for k := range 256 {
		if s := api.ReplicaKind(k).String(); s != "UNKNOWN" {
			replicas = append(replicas, s)
		}
	}
	return map[string][]string{
		"Replica": replicas,                  // ReplicaKind.String
		"Job":     {api.JobKindPrefixDelete}, // the only job kind the fsm creates
		"Version": {jsonout.KindVersion},
		"Put":     {jsonout.KindPut},
		"Failure": {jsonout.KindError},
	}
}

// kindTypes are the struct types of the non-test sources of this package
// and of package jsonout with a field whose JSON name is "kind".
func kindTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.Glob("../../jsonout/*.go")
	files = append(files, out...)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var types []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if field.Tag == nil {
					continue
				}
				tag, err := strconv.Unquote(field.Tag.Value)
				if err != nil {
					continue
				}
				if jsonName, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ","); jsonName == "kind" {
					types = append(types, ts.Name.Name)
				}
			}
			return true
		})
	}
	sort.Strings(types)
	return types
}

// docKind is a "kind" in a JSON example of docs/CLI.md.
var docKind = regexp.MustCompile(`"kind":\s*"([^"]*)"`)

// TestCLIDocShowsOnlyPrintedKinds: every "kind" value in docs/CLI.md's
// JSON is one the binary prints, collected from its JSON output types.
func TestCLIDocShowsOnlyPrintedKinds(t *testing.T) {
	known := printedKinds()
	var printed []string
	for _, typ := range kindTypes(t) {
		kinds, ok := known[typ]
		if !ok {
			t.Errorf("%s has a \"kind\" field: add the kinds it prints to printedKinds", typ)
			continue
		}
		printed = append(printed, kinds...)
	}
	if len(printed) == 0 {
		t.Fatal("no JSON output type prints a kind")
	}
	for _, m := range docKind.FindAllStringSubmatch(cliDoc(t), -1) {
		if !slices.Contains(printed, m[1]) {
			t.Errorf("docs/CLI.md shows %s, a kind the binary never prints (it prints %q)", m[0], printed)
		}
	}
}
