package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// goList lists the module's packages as go list sees them with tags:
// their non-test imports only. Tests may import any layer (the client's
// examples run against devcluster; the integration tests drive the
// binary), so only what ships is held to the table.
func goList(t *testing.T, tags string) []Package {
	t.Helper()
	args := []string{"list", "-e", "-json=ImportPath,Imports,Module", "./..."}
	if tags != "" {
		args = []string{"list", "-e", "-tags", tags, "-json=ImportPath,Imports,Module", "./..."}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Module     struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		mod := p.Module.Path + "/"
		rel, ok := strings.CutPrefix(p.ImportPath, mod)
		if !ok {
			t.Fatalf("go list names %s outside module %s", p.ImportPath, p.Module.Path)
		}
		pkg := Package{Path: rel}
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, mod); ok {
				pkg.Imports = append(pkg.Imports, r)
			}
		}
		pkgs = append(pkgs, pkg)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// TestNoUpwardImports: no package of the module imports a package of a
// higher layer, or a package of test support, in the default build or
// with the testhooks tag.
func TestNoUpwardImports(t *testing.T) {
	for _, tags := range []string{"", "testhooks"} {
		pkgs := goList(t, tags)
		for _, p := range Check(Layers, pkgs) {
			t.Errorf("tags %q: %s", tags, p)
		}
		for _, p := range CheckTestOnly(TestOnly, pkgs) {
			t.Errorf("tags %q: %s", tags, p)
		}
	}
}

// TestCheckRefusesUpwardImports shows what Check refuses and what it lets
// through, on packages of its own.
func TestCheckRefusesUpwardImports(t *testing.T) {
	layers := [][]string{{"api", "internal/..."}, {"fsm"}, {"master"}}
	got := Check(layers, []Package{
		{Path: "api"},
		{Path: "internal/x", Imports: []string{"api"}},
		{Path: "fsm", Imports: []string{"api", "internal/x", "master"}},
		{Path: "master", Imports: []string{"fsm", "api"}},
		{Path: "internal", Imports: nil},
		{Path: "tool", Imports: []string{"api"}},
		{Path: "api", Imports: []string{"ghost"}},
	})
	want := []string{
		"api imports ghost, which is in no layer",
		"fsm (layer 1) imports master (layer 2)",
		"internal is in no layer",
		"tool is in no layer",
	}
	if len(got) != len(want) {
		t.Fatalf("Check = %q, want %d problems starting %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}

// TestCheckTestOnlyRefusesShippedImports: a package that imports test
// support is refused; the test support importing its own leaves is not.
func TestCheckTestOnlyRefusesShippedImports(t *testing.T) {
	got := CheckTestOnly([]string{"internal/testutil"}, []Package{
		{Path: "internal/testutil", Imports: []string{"internal/tlsconf"}},
		{Path: "master", Imports: []string{"api", "internal/testutil"}},
		{Path: "api"},
	})
	if len(got) != 1 || !strings.HasPrefix(got[0], "master imports internal/testutil, which only tests may import") {
		t.Fatalf("CheckTestOnly = %q, want master's import of internal/testutil refused alone", got)
	}
}
