package doccheck

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// TestTree is the checks themselves, run on the repository: every
// citation of a numbered section or invariant resolves (Check), every
// package DESIGN.md stays within MaxPackageDesignLines and
// docs/SCALING.md within MaxScalingLines (CheckLengths).
func TestTree(t *testing.T) {
	for name, check := range map[string]func(fs.FS) ([]Problem, error){
		"citations resolve":    Check,
		"documents stay short": CheckLengths,
	} {
		t.Run(name, func(t *testing.T) {
			problems, err := check(os.DirFS("../.."))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

const fakeSpec = `# spec

## 1. Processes

## 2. Identities

## 3. Invariants

1. **One.** text
2. **Two.** text
`

// TestCheckFindsBrokenCitations shows what the check refuses and what it
// lets through, on a small tree of its own.
func TestCheckFindsBrokenCitations(t *testing.T) {
	cases := []struct {
		name, file, text string
		want             string // "" = no problem
	}{
		{"section", "a/x.go", "// docs/DESIGN.md §2 says so", ""},
		{"range", "a/x.go", "// docs/DESIGN.md §1–§3", ""},
		{"short range", "a/x.go", "// (docs/DESIGN.md §1-3)", ""},
		{"list", "a/x.go", "// docs/DESIGN.md §1, §2 and §3", ""},
		{"over a line break", "a/x.go", "// the spec, docs/DESIGN.md\n// §2, says so", ""},
		{"relative to the file", "docs/x.md", "See DESIGN.md §2.", ""},
		{"missing section", "a/x.go", "// docs/DESIGN.md §4", "has no section 4"},
		{"missing in a range", "a/x.go", "// docs/DESIGN.md §2–§5", "has no section 4"},
		{"bare in Go", "a/x.go", "// see §2", "names no document"},
		{"package DESIGN.md", "a/x.go", "// DESIGN.md §2", "a/DESIGN.md has no numbered sections"},
		{"no such document", "b/x.go", "// DESIGN.md §2", "no document DESIGN.md here"},
		{"self in a numbered document", "docs/p.md", "## 1. One\n\nas §1 says", ""},
		{"self in a plain document", "docs/q.md", "as §1 says", "names no document"},
		{"another work", "a/x.go", "// the Raft dissertation's §6.3", ""},
		{"invariant", "a/x.go", "// keeps invariant 2", ""},
		{"invariants", "a/x.go", "// invariants 1 and 2 hold", ""},
		{"invariant range", "a/x.go", "// invariants 1–2 hold", ""},
		{"missing invariant", "a/x.go", "// keeps invariant 3", "has no invariant 3"},
		{"missing in a list", "a/x.go", "// invariants 1, 2 and 7", "has no invariant 7"},
		{"missing in an invariant range", "a/x.go", "// invariants 1–4", "has no invariant 3"},
		{"invariants over a line break", "a/x.md", "Invariants\n1 and 9 hold.", "has no invariant 9"},
		{"invariant of the spec", "a/x.go", "// docs/DESIGN.md invariant 2", ""},
		{"invariant of another document", "a/x.go", "// DESIGN.md invariant 2", "the invariants are numbered in docs/DESIGN.md"},
		{"invariant of, after", "a/x.md", "Invariants 1 and 2 of DESIGN.md hold.", "the invariants are numbered in docs/DESIGN.md"},
		{"heading", "a/x.go", `// DESIGN.md "Why it is so"`, ""},
		{"heading over a line break", "b/x.go", "// (a/DESIGN.md, \"Why\n// it\")", ""},
		{"bold title", "a/x.go", `// (DESIGN.md, "Done")`, ""},
		{"missing heading", "a/x.go", `// DESIGN.md ("How")`, "has no heading or bold title"},
		{"heading of no document", "b/x.go", `// DESIGN.md "Why"`, "no document DESIGN.md here"},
		{"path of a document", "b/x.go", "// see a/DESIGN.md and docs/DESIGN.md", ""},
		{"path of no document", "b/x.go", "// see b/DESIGN.md", "b/DESIGN.md: no such document"},
		{"a link is not a path here", "b/x.go", "// https://example.com/x/DESIGN.md", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"docs/DESIGN.md": {Data: []byte(fakeSpec)},
				"a/DESIGN.md":    {Data: []byte("# a\n\n## Why it is so\n\n* **Done.** text\n")},
				tc.file:          {Data: []byte(tc.text)},
			}
			problems, err := Check(fsys)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no problem, got %q", got)
				}
				return
			}
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("want a problem containing %q, got %q", tc.want, got)
			}
			if !strings.HasPrefix(got[0], tc.file+":") {
				t.Fatalf("problem names %q, want %s", got[0], tc.file)
			}
		})
	}
}

// TestCheckSpecNumbering refuses a specification whose sections or
// invariants skip a number, so that a renumbering cannot leave a gap
// that old citations would silently fall into.
func TestCheckSpecNumbering(t *testing.T) {
	for name, spec := range map[string]string{
		"section gap":   "## 1. A\n\n## 3. C\n\n## 4. Invariants\n\n1. **One.**\n",
		"invariant gap": "## 1. A\n\n## 2. Invariants\n\n1. **One.**\n3. **Three.**\n",
		"no invariants": "## 1. A\n",
	} {
		t.Run(name, func(t *testing.T) {
			problems, err := Check(fstest.MapFS{"docs/DESIGN.md": {Data: []byte(spec)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Fatal("want a problem, got none")
			}
		})
	}
}

// TestCheckLengthsFindsLongDocuments: the bound is on the line count, for
// pages one and two directories deep, and leaves the specification alone.
func TestCheckLengthsFindsLongDocuments(t *testing.T) {
	lines := func(n int) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(strings.Repeat("text\n", n))}
	}
	fsys := fstest.MapFS{
		"docs/DESIGN.md":           lines(1000),
		"docs/SCALING.md":          lines(MaxScalingLines + 1),
		"fsm/DESIGN.md":            lines(MaxPackageDesignLines),
		"holder/DESIGN.md":         lines(MaxPackageDesignLines + 1),
		"fsm/dfsalloc/DESIGN.md":   lines(MaxPackageDesignLines + 10),
		"fsm/dfsalloc/x/DESIGN.md": lines(1000), // three deep: not a package page this check knows
		"master/NOTES.md":          lines(1000),
	}
	problems, err := CheckLengths(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.File)
	}
	want := []string{"holder/DESIGN.md", "fsm/dfsalloc/DESIGN.md", "docs/SCALING.md"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("CheckLengths reported %v, want %v", got, want)
	}
	delete(fsys, "docs/SCALING.md")
	if _, err := CheckLengths(fsys); err != nil {
		t.Errorf("a tree without docs/SCALING.md: %v", err)
	}
}
