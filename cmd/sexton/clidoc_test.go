package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"sexton/jsonout"
)

// docs/CLI.md is the CLI's contract: every verb has a section with its
// --help verbatim, every --json verb an example, and the exit statuses a
// table. These tests keep it true; -update-cli-doc rewrites the help blocks.

var updateCLIDoc = flag.Bool("update-cli-doc", false, "rewrite the help blocks of docs/CLI.md from the verb table")

const cliDocPath = "../../docs/CLI.md"

var (
	cliDocOnce sync.Once
	cliDocText string
	cliDocErr  error
)

func cliDoc(t *testing.T) string {
	t.Helper()
	cliDocOnce.Do(func() {
		b, err := os.ReadFile(cliDocPath)
		cliDocText, cliDocErr = string(b), err
	})
	if cliDocErr != nil {
		t.Fatal(cliDocErr)
	}
	return cliDocText
}

// docSection is the text of "### sexton PATH" up to the next heading.
func docSection(doc, path string) (string, bool) {
	head := "\n### sexton " + path + "\n"
	i := strings.Index(doc, head)
	if i < 0 {
		return "", false
	}
	rest := doc[i+len(head):]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	return rest, true
}

// helpBlock matches one generated help block.
var helpBlock = regexp.MustCompile("(?s)<!-- help: ([^>]*) -->\n```text\n(.*?)```\n<!-- end help -->")

// docJSONExamples are the ```json blocks of a verb's section, in order.
func docJSONExamples(t *testing.T, path string) [][]byte {
	t.Helper()
	sec, ok := docSection(cliDoc(t), path)
	if !ok {
		return nil
	}
	var out [][]byte
	for {
		_, after, ok := strings.Cut(sec, "```json\n")
		if !ok {
			return out
		}
		ex, rest, ok := strings.Cut(after, "```")
		if !ok {
			return out
		}
		out = append(out, []byte(ex))
		sec = rest
	}
}

func TestCLIDoc(t *testing.T) {
	doc := cliDoc(t)
	// Flag defaults come from the environment: show the built-in ones.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SEXTON_") || strings.HasPrefix(k, "MOONCAKE_") || k == "USER" {
			t.Setenv(k, "")
		}
	}
	helps := map[string]string{}
	for _, v := range verbs {
		out, err := captureHelp(t, append(strings.Fields(v.path), "--help")...)
		if err != nil {
			t.Fatalf("%s --help: %v", v.path, err)
		}
		helps[v.path] = out
	}
	if *updateCLIDoc {
		doc = helpBlock.ReplaceAllStringFunc(doc, func(m string) string {
			path := helpBlock.FindStringSubmatch(m)[1]
			h, ok := helps[path]
			if !ok {
				return m
			}
			return fmt.Sprintf("<!-- help: %s -->\n```text\n%s```\n<!-- end help -->", path, h)
		})
		if err := os.WriteFile(cliDocPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blocks := map[string]string{}
	for _, m := range helpBlock.FindAllStringSubmatch(doc, -1) {
		if _, dup := blocks[m[1]]; dup {
			t.Errorf("docs/CLI.md: two help blocks for %q", m[1])
		}
		blocks[m[1]] = m[2]
	}
	for _, v := range verbs {
		sec, ok := docSection(doc, v.path)
		if !ok {
			t.Errorf("docs/CLI.md has no section \"### sexton %s\"", v.path)
			continue
		}
		if !strings.Contains(sec, "<!-- help: "+v.path+" -->") {
			t.Errorf("docs/CLI.md: the section of %q has no help block", v.path)
		}
		if blocks[v.path] != helps[v.path] {
			t.Errorf("docs/CLI.md: the help of %q is not what --help prints; run go test ./cmd/sexton -run TestCLIDoc -update-cli-doc", v.path)
		}
		if !strings.Contains(sec, "Exit") {
			t.Errorf("docs/CLI.md: the section of %q does not say how it exits", v.path)
		}
		exs := docJSONExamples(t, v.path)
		if v.takes&jsonFlag != 0 {
			if len(exs) == 0 {
				t.Errorf("docs/CLI.md: %q takes --json but has no example", v.path)
			}
			for _, ex := range exs {
				if err := jsonout.Check(ex); err != nil {
					t.Errorf("docs/CLI.md: a --json example of %q: %v", v.path, err)
				}
			}
		} else if len(exs) > 0 {
			t.Errorf("docs/CLI.md: %q has a --json example but takes no --json", v.path)
		}
	}
	for path := range blocks {
		if !slices.ContainsFunc(verbs, func(v verb) bool { return v.path == path }) {
			t.Errorf("docs/CLI.md documents %q, which is not a verb", path)
		}
	}
	for _, code := range []int{0, exitFailed, exitUsage, exitMasterHalted, exitOutcomeUnknown} {
		if !strings.Contains(doc, fmt.Sprintf("\n| %d | ", code)) {
			t.Errorf("docs/CLI.md: the exit status table has no row for %d", code)
		}
	}
}
