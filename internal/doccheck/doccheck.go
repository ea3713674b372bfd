// Package doccheck keeps the tree's citations of its specification true.
// Comments and documents cite docs/DESIGN.md by section ("docs/DESIGN.md
// §4", "§4–§6") and by invariant ("invariant 7", "invariants 1 and 3");
// Check finds every such citation in the repository's sources and
// documents and reports each one that names a section or an invariant the
// cited document does not have, or a document that has no numbered
// sections at all (a package's DESIGN.md is cited by its headings, never by
// §). A citation that names no document is resolved in the file itself when
// that file is a document with numbered sections (docs/PROTOCOL.md cites
// its own §8), and is refused elsewhere: a reader of a Go comment cannot
// tell which DESIGN.md a bare § means. A document cited by a quoted
// heading (master/DESIGN.md, "Halting") must have a heading or a bold
// title containing the quote, and a document named by its path must
// exist.
package doccheck

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// SpecPath is the project's specification, relative to the repository
// root: the document whose invariants "invariant N" means.
const SpecPath = "docs/DESIGN.md"

// ownDir holds this package, whose sources and tests spell out citations
// as examples; Check leaves it out.
const ownDir = "internal/doccheck"

// Problem is one citation that does not resolve.
type Problem struct {
	File string // relative to the root given to Check
	Line int    // 1-based
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// scanned are the file kinds whose text can carry a citation.
var scanned = map[string]bool{".go": true, ".md": true, ".pml": true, ".py": true, ".yml": true, ".yaml": true}

var (
	// sectionHeading is a numbered section: "## 4. Deletion lifecycle".
	sectionHeading = regexp.MustCompile(`^## (\d+)\. \S`)
	// invariantItem is one numbered invariant: "7. **Latest copy last.**".
	invariantItem = regexp.MustCompile(`^(\d+)\. \*\*`)
	// sectionRef is "§4", "§6.3", "§4–§6", "§3–4" or "§7-9".
	sectionRef = regexp.MustCompile(`§(\d+)(?:\.\d+)*(?:\s*[–-]\s*§?(\d+)(?:\.\d+)*)?`)
	// invariantRef is "invariant 7", "invariants 1 and 3",
	// "invariants 2, 3, 4, 5 and 7", "invariants 1–12".
	invariantRef = regexp.MustCompile(`(?i)\binvariants?\s+(\d+(?:\s*(?:,\s*and|,|and|or|[–-])\s*\d+)*)\b`)
	number       = regexp.MustCompile(`\d+`)
	// headingRef is a document cited by a quoted heading:
	// master/DESIGN.md, "Writes and group commit"; DESIGN.md ("Halting").
	headingRef = regexp.MustCompile(`([A-Za-z0-9_][A-Za-z0-9_./-]*\.md),?\s+\(?"([^"]{1,120})"`)
	boldPhrase = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	spaces     = regexp.MustCompile(`\s+`)
	// docName is a Markdown document named in running text.
	docName = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b`)
	// docBefore and docAfter name the document right next to a citation:
	// "docs/DESIGN.md invariant 11", "invariants 1 and 3 of docs/DESIGN.md".
	docBefore = regexp.MustCompile(`([A-Za-z0-9_][A-Za-z0-9_./-]*\.md)[,]?\s*$`)
	docAfter  = regexp.MustCompile(`^\s+of\s+([A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b`)
	// external marks a § of another work: "the Raft dissertation's §6.3".
	external = regexp.MustCompile(`(?i)(thesis|dissertation|dissertation's|rfc\s*\d+)\s*$`)
	// sentenceEnd bounds how far back a § looks for the document it cites.
	sentenceEnd = regexp.MustCompile(`[.!?]\s`)
	// commentMark is what starts a comment or quote line, dropped so that
	// a citation broken over two lines reads as one.
	commentMark = regexp.MustCompile(`^\s*(?://+|#+|\*+|/\*+|>+)?\s?`)
)

// outline is what a document offers to cite: its numbered sections and,
// for the specification, its numbered invariants.
type outline struct {
	sections   map[int]bool
	invariants map[int]bool
	// anchors are the headings and the bold run-in titles ("**Done.**"),
	// lower-cased, that a quoted citation ("fsm/DESIGN.md \"Rebuild\"")
	// may name.
	anchors []string
}

func parseOutline(text string) outline {
	o := outline{sections: map[int]bool{}, invariants: map[int]bool{}}
	inInvariants := false
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if inCode {
			continue
		}
		if strings.HasPrefix(l, "#") {
			o.anchors = append(o.anchors, strings.ToLower(strings.TrimLeft(l, "# ")))
		}
		for _, m := range boldPhrase.FindAllStringSubmatch(l, -1) {
			o.anchors = append(o.anchors, strings.ToLower(m[1]))
		}
		if strings.HasPrefix(l, "## ") {
			inInvariants = strings.Contains(strings.ToLower(l), "invariants")
			if m := sectionHeading.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				o.sections[n] = true
			}
			continue
		}
		if m := invariantItem.FindStringSubmatch(l); m != nil && inInvariants {
			n, _ := strconv.Atoi(m[1])
			o.invariants[n] = true
		}
	}
	return o
}

// hasAnchor reports whether a heading or bold title contains quote
// (case and spacing aside; a quote may stop short of a heading's tail).
func (o *outline) hasAnchor(quote string) bool {
	q := strings.ToLower(strings.TrimRight(quote, ".,;: "))
	for _, a := range o.anchors {
		if strings.Contains(spaces.ReplaceAllString(a, " "), q) {
			return true
		}
	}
	return false
}

// checker holds the documents read so far.
type checker struct {
	fsys     fs.FS
	outlines map[string]*outline // nil: the file does not exist
	problems []Problem
}

func (c *checker) outline(name string) *outline {
	if o, ok := c.outlines[name]; ok {
		return o
	}
	var o *outline
	if b, err := fs.ReadFile(c.fsys, name); err == nil {
		p := parseOutline(string(b))
		o = &p
	}
	c.outlines[name] = o
	return o
}

// resolve finds the document a file cites by name: relative to the
// citing file first, then to the root ("docs/DESIGN.md" from anywhere).
func (c *checker) resolve(from, name string) (string, bool) {
	for _, cand := range []string{path.Join(path.Dir(from), name), path.Clean(name)} {
		if c.outline(cand) != nil {
			return cand, true
		}
	}
	return "", false
}

func (c *checker) add(file string, line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// Check reports every citation in fsys (a repository's root) that does
// not resolve, and the specification's own numbering if it is not 1, 2,
// 3, … for sections and for invariants.
func Check(fsys fs.FS) ([]Problem, error) {
	c := &checker{fsys: fsys, outlines: map[string]*outline{}}
	spec := c.outline(SpecPath)
	if spec == nil {
		return nil, fmt.Errorf("%s is missing", SpecPath)
	}
	checkNumbering := func(what string, set map[int]bool) {
		for i := 1; i <= len(set); i++ {
			if !set[i] {
				c.add(SpecPath, 1, "the %s are not numbered 1 to %d: %d is missing", what, len(set), i)
			}
		}
	}
	checkNumbering("sections", spec.sections)
	checkNumbering("invariants", spec.invariants)
	if len(spec.invariants) == 0 {
		c.add(SpecPath, 1, "no invariants found (a section whose heading says Invariants, items \"N. **Name.**\")")
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "__pycache__" || p == ownDir) {
				return fs.SkipDir
			}
			return nil
		}
		if !scanned[path.Ext(p)] {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		c.scan(p, string(b))
		return nil
	})
	sort.SliceStable(c.problems, func(i, j int) bool {
		if c.problems[i].File != c.problems[j].File {
			return c.problems[i].File < c.problems[j].File
		}
		return c.problems[i].Line < c.problems[j].Line
	})
	return c.problems, err
}

// scan checks the citations of one file. Its lines are joined into one
// text (comment marks dropped) so that a citation may span a line break.
func (c *checker) scan(file, text string) {
	if !strings.Contains(text, "§") && !strings.Contains(text, ".md") && !strings.Contains(strings.ToLower(text), "invariant") {
		return
	}
	lines := strings.Split(text, "\n")
	starts := make([]int, len(lines))
	var b strings.Builder
	md := path.Ext(file) == ".md"
	for i, l := range lines {
		starts[i] = b.Len()
		switch {
		case md && strings.HasPrefix(l, "#"):
			// A heading ends a sentence: it lends its words to no citation after it.
			b.WriteString(l + ". ")
		case md:
			b.WriteString(strings.TrimLeft(l, "> "))
		default:
			b.WriteString(commentMark.ReplaceAllString(l, ""))
		}
		if strings.TrimSpace(l) == "" {
			b.WriteString(". ")
		}
		b.WriteByte(' ')
	}
	joined := b.String()
	lineOf := func(off int) int { return sort.SearchInts(starts, off+1) }

	for _, m := range sectionRef.FindAllStringSubmatchIndex(joined, -1) {
		line := lineOf(m[0])
		before := joined[max(0, m[0]-240):m[0]]
		if e := sentenceEnd.FindAllStringIndex(before, -1); e != nil {
			before = before[e[len(e)-1][1]:]
		}
		if external.MatchString(before) {
			continue
		}
		lo, _ := strconv.Atoi(joined[m[2]:m[3]])
		hi := lo
		if m[4] >= 0 {
			hi, _ = strconv.Atoi(joined[m[4]:m[5]])
		}
		cite := strings.TrimSpace(joined[m[0]:m[1]])
		target, named := file, false
		if names := docName.FindAllString(before, -1); names != nil {
			name := names[len(names)-1]
			t, ok := c.resolve(file, name)
			if !ok {
				c.add(file, line, "%s %s: no document %s here or at the repository root; name it by its path from the root (%s %s for the specification)", name, cite, name, SpecPath, cite)
				continue
			}
			target, named = t, true
		}
		o := c.outline(target)
		if !named && (path.Ext(file) != ".md" || len(o.sections) == 0) {
			c.add(file, line, "%s names no document: write %s %s (or the document it means)", cite, SpecPath, cite)
			continue
		}
		if len(o.sections) == 0 {
			c.add(file, line, "%s %s: %s has no numbered sections; cite %s by §, a package's DESIGN.md by its heading", target, cite, target, SpecPath)
			continue
		}
		if hi < lo {
			c.add(file, line, "%s: a backwards range", cite)
			continue
		}
		for n := lo; n <= hi; n++ {
			if !o.sections[n] {
				c.add(file, line, "%s: %s has no section %d", cite, target, n)
			}
		}
	}

	// A document named by its path must exist: a moved or renamed page
	// leaves no citation pointing nowhere.
	for _, m := range docName.FindAllStringIndex(joined, -1) {
		name := joined[m[0]:m[1]]
		if !strings.Contains(name, "/") || strings.Contains(name, "://") || m[0] > 0 && joined[m[0]-1] == '/' {
			continue
		}
		if _, ok := c.resolve(file, name); !ok {
			c.add(file, lineOf(m[0]), "%s: no such document here or at the repository root", name)
		}
	}

	for _, m := range headingRef.FindAllStringSubmatchIndex(joined, -1) {
		line := lineOf(m[0])
		name, quote := joined[m[2]:m[3]], spaces.ReplaceAllString(joined[m[4]:m[5]], " ")
		target, ok := c.resolve(file, name)
		if !ok {
			c.add(file, line, "%s %q: no document %s here or at the repository root", name, quote, name)
			continue
		}
		if !c.outline(target).hasAnchor(quote) {
			c.add(file, line, "%s %q: %s has no heading or bold title containing %q", name, quote, target, quote)
		}
	}

	spec := c.outline(SpecPath)
	for _, m := range invariantRef.FindAllStringSubmatchIndex(joined, -1) {
		line := lineOf(m[0])
		cite := strings.TrimSpace(joined[m[0]:m[1]])
		var name string
		if d := docBefore.FindStringSubmatch(joined[max(0, m[0]-240):m[0]]); d != nil {
			name = d[1]
		} else if d := docAfter.FindStringSubmatch(joined[m[1]:]); d != nil {
			name = d[1]
		}
		if name != "" {
			if t, ok := c.resolve(file, name); !ok || t != SpecPath {
				c.add(file, line, "%s %s: the invariants are numbered in %s; cite it", name, cite, SpecPath)
				continue
			}
		}
		nums := joined[m[2]:m[3]]
		idx := number.FindAllStringIndex(nums, -1)
		for i, r := range idx {
			n, _ := strconv.Atoi(nums[r[0]:r[1]])
			hi := n
			// "1–12" is a range: everything up to the next number.
			if i+1 < len(idx) && strings.ContainsAny(nums[r[1]:idx[i+1][0]], "–-") {
				hi, _ = strconv.Atoi(nums[idx[i+1][0]:idx[i+1][1]])
			}
			for k := n; k <= hi; k++ {
				if !spec.invariants[k] {
					c.add(file, line, "%s: %s has no invariant %d", cite, SpecPath, k)
				}
			}
		}
	}
}

// MaxPackageDesignLines bounds a package's DESIGN.md: it records the
// decisions the package makes and why, and the specification, the
// measurements and the history each live elsewhere (docs/DESIGN.md,
// docs/SCALING.md, the commit log). A page past the bound has started to
// collect what belongs there.
const MaxPackageDesignLines = 250

// MaxScalingLines bounds docs/SCALING.md, which keeps the figures that
// still hold under stable headings rather than every run ever made.
const MaxScalingLines = 400

// ScalingPath is the document of measurements.
const ScalingPath = "docs/SCALING.md"

// CheckLengths reports every package DESIGN.md (one or two directories
// deep: fsm/DESIGN.md, fsm/dfsalloc/DESIGN.md) longer than
// MaxPackageDesignLines and a docs/SCALING.md longer than
// MaxScalingLines. The specification, docs/DESIGN.md, is not a package
// page and has no bound here.
func CheckLengths(fsys fs.FS) ([]Problem, error) {
	var problems []Problem
	check := func(name string, max int) error {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > max {
			problems = append(problems, Problem{File: name, Line: max + 1,
				Msg: fmt.Sprintf("%d lines, over the bound of %d: move measurements to %s, specification to %s and history to the commit log", n, max, ScalingPath, SpecPath)})
		}
		return nil
	}
	for _, pattern := range []string{"*/DESIGN.md", "*/*/DESIGN.md"} {
		names, err := fs.Glob(fsys, pattern)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if name == SpecPath {
				continue
			}
			if err := check(name, MaxPackageDesignLines); err != nil {
				return nil, err
			}
		}
	}
	if err := check(ScalingPath, MaxScalingLines); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return problems, nil
}
