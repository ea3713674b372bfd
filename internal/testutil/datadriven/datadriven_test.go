package datadriven

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestParseKeepsBlocksAndComments: a file's blocks come back with their
// commands, expected outputs, lines and leading comments.
func TestParseKeepsBlocksAndComments(t *testing.T) {
	text := "# adds\nadd a=1 b=2\n----\n3\n\nadd a=2 b=2 fast\n----\n4\nfour\n\n# end\n"
	blocks, trailing, err := parse("f.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].comments[0] != "# adds" || blocks[0].expected != "3" ||
		blocks[1].line != 6 || blocks[1].expected != "4\nfour" || len(trailing) != 1 {
		t.Fatalf("parse: %+v, trailing %q", blocks, trailing)
	}
	c := parseCmd("f.txt:6", blocks[1].cmd)
	if c.Name != "add" || c.Int(t, "a", 0) != 2 || !c.Has("fast") || c.Has("slow") || c.Str("slow", "d") != "d" {
		t.Fatalf("parseCmd: %+v", c)
	}
}

// TestParseRefusesACommandWithoutSeparator: a command not followed by
// ---- is an error naming its line, not a silently skipped block.
func TestParseRefusesACommandWithoutSeparator(t *testing.T) {
	_, _, err := parse("f.txt", "add a=1\n3\n")
	if err == nil || !strings.Contains(err.Error(), "f.txt:1") {
		t.Fatalf("parse = %v, want an error at f.txt:1", err)
	}
}

// TestRunFilePassesMatchingOutputs runs a file whose outputs match.
func TestRunFilePassesMatchingOutputs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(path, []byte("add a=1 b=2\n----\n3\n\nadd a=2\n----\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	RunFile(t, path, func(t *testing.T, c Cmd) string {
		ran++
		return strconv.FormatInt(c.Int(t, "a", 0)+c.Int(t, "b", 0), 10)
	})
	if ran != 2 {
		t.Fatalf("ran %d commands, want 2", ran)
	}
}
