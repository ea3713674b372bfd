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
// higher layer, in the default build or with the testhooks tag.
func TestNoUpwardImports(t *testing.T) {
	for _, tags := range []string{"", "testhooks"} {
		for _, p := range Check(Layers, goList(t, tags)) {
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

// TestTestOnlyPackagesStayInTests: no package that ships imports a
// test-only package (the fault filesystems), in the default build or with
// the testhooks tag; their tests may.
func TestTestOnlyPackagesStayInTests(t *testing.T) {
	for _, tags := range []string{"", "testhooks"} {
		for _, p := range CheckTestOnly(TestOnly, goList(t, tags)) {
			t.Errorf("tags %q: %s", tags, p)
		}
	}
}

// TestCheckTestOnlyRefusesShippedImports shows what CheckTestOnly refuses,
// on packages of its own.
func TestCheckTestOnlyRefusesShippedImports(t *testing.T) {
	got := CheckTestOnly([]string{"internal/fsys/errorfs"}, []Package{
		{Path: "holder", Imports: []string{"internal/fsys", "internal/fsys/errorfs"}},
		{Path: "raftio", Imports: []string{"internal/fsys"}},
		{Path: "internal/fsys/errorfs", Imports: []string{"internal/fsys"}},
	})
	if len(got) != 1 || !strings.HasPrefix(got[0], "holder imports internal/fsys/errorfs, which only tests may import") {
		t.Fatalf("CheckTestOnly = %q, want one problem for holder", got)
	}
}
