// Package datadriven runs data-driven test files in the style of the
// fsm's scenarios (after etcd-io/raft's testdata): each file is a
// sequence of blocks
//
//	# comment lines, kept on rewrite
//	command arg=value flag ...
//	----
//	expected output
//	<blank line>
//
// and a test supplies the function that runs one command and renders its
// outcome. Run the test with -rewrite to write the outputs the code gives
// into the file instead of comparing (review the diff before keeping it).
package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of data-driven tests")

// Cmd is one command of a file: its name, its arguments (key=value, or a
// bare key with an empty value), and where it is.
type Cmd struct {
	Pos  string // file:line
	Name string
	Args []Arg
	Line string
}

// Arg is one argument of a command.
type Arg struct{ Key, Val string }

type block struct {
	line     int
	cmd      string
	expected string
	comments []string
}

// parse splits a file into blocks; trailing holds the comments after the
// last one.
func parse(path, text string) (blocks []block, trailing []string, err error) {
	lines := strings.Split(text, "\n")
	var comments []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, "#") {
			comments = append(comments, l)
			continue
		}
		b := block{line: i + 1, cmd: strings.TrimSpace(l), comments: comments}
		comments = nil
		i++
		if i >= len(lines) || lines[i] != "----" {
			return nil, nil, fmt.Errorf("%s:%d: command without a ---- line after it", path, b.line)
		}
		var out []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		b.expected = strings.Join(out, "\n")
		blocks = append(blocks, b)
	}
	return blocks, comments, nil
}

func parseCmd(pos, line string) Cmd {
	fields := strings.Fields(line)
	c := Cmd{Pos: pos, Name: fields[0], Line: line}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		c.Args = append(c.Args, Arg{Key: k, Val: v})
	}
	return c
}

// RunFile runs the blocks of path in order through run, which renders
// each command's outcome, and fails the test on every output that differs
// from the file's (or rewrites the file with -rewrite).
func RunFile(t *testing.T, path string, run func(t *testing.T, c Cmd) string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, trailing, err := parse(path, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, bl := range blocks {
		got := strings.TrimRight(run(t, parseCmd(fmt.Sprintf("%s:%d", path, bl.line), bl.cmd)), "\n")
		if *rewrite {
			for _, cm := range bl.comments {
				b.WriteString(cm + "\n")
			}
			b.WriteString(bl.cmd + "\n----\n" + got + "\n\n")
			continue
		}
		if got != bl.expected {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, bl.line, bl.cmd, got, bl.expected)
		}
	}
	if *rewrite {
		for _, cm := range trailing {
			b.WriteString(cm + "\n")
		}
		if err := os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Walk calls file for every .txt file of dir, each in a subtest named
// after the file; file typically makes fresh state and calls RunFile.
func Walk(t *testing.T, dir string, file func(t *testing.T, path string)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no data-driven files in %s", dir)
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txt"), func(t *testing.T) { file(t, p) })
	}
}

// Has reports whether the command has argument k.
func (c Cmd) Has(k string) bool {
	for _, a := range c.Args {
		if a.Key == k {
			return true
		}
	}
	return false
}

// Str is argument k's value, or def when the command has no argument k.
func (c Cmd) Str(k, def string) string {
	for _, a := range c.Args {
		if a.Key == k {
			return a.Val
		}
	}
	return def
}

// Need is argument k's value; the test fails when the command lacks it.
func (c Cmd) Need(t *testing.T, k string) string {
	t.Helper()
	if !c.Has(k) {
		t.Fatalf("%s: %s needs %s=", c.Pos, c.Name, k)
	}
	return c.Str(k, "")
}

// Int is argument k as an integer, def when absent.
func (c Cmd) Int(t *testing.T, k string, def int64) int64 {
	t.Helper()
	if !c.Has(k) {
		return def
	}
	v, err := strconv.ParseInt(c.Str(k, ""), 10, 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", c.Pos, k, c.Str(k, ""), err)
	}
	return v
}

// Float is argument k as a float, def when absent.
func (c Cmd) Float(t *testing.T, k string, def float64) float64 {
	t.Helper()
	if !c.Has(k) {
		return def
	}
	v, err := strconv.ParseFloat(c.Str(k, ""), 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", c.Pos, k, c.Str(k, ""), err)
	}
	return v
}

// Dur is argument k as a time.Duration ("1.5s", "250ms"), def when absent.
func (c Cmd) Dur(t *testing.T, k string, def time.Duration) time.Duration {
	t.Helper()
	if !c.Has(k) {
		return def
	}
	v, err := time.ParseDuration(c.Str(k, ""))
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", c.Pos, k, c.Str(k, ""), err)
	}
	return v
}

// Fail fails the test for a command the runner does not know.
func (c Cmd) Fail(t *testing.T, why string) string {
	t.Helper()
	t.Fatalf("%s: %s: %s", c.Pos, c.Line, why)
	return ""
}
