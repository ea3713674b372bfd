package completion

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The bash script made of a small table completes command words after
// each prefix, a command's flags (skipping a flag's value), and the words
// an argument is given.
func TestBashCompletesTheTable(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tab := New([]Command{
		{Path: "put", Flags: []string{"--masters", "--replicas", "--help"}, TakesValue: map[string]bool{"--masters": true, "--replicas": true}},
		{Path: "operator jobs", Flags: []string{"--json", "--help"}},
		{Path: "operator jobs cancel", Flags: []string{"--help"}},
		{Path: "completion", Flags: []string{"--help"}},
	}, map[string][]string{"completion": {"bash", "zsh"}})
	script := filepath.Join(t.TempDir(), "sexton.bash")
	if err := os.WriteFile(script, []byte(Bash(tab)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for line, want := range map[string][]string{
		"sexton op":                   {"operator"},
		"sexton ":                     {"help", "--help", "--version", "put", "operator", "completion"},
		"sexton operator jobs ":       {"cancel"},
		"sexton operator jobs --":     {"--json", "--help"},
		"sexton --masters m put k --": {"--masters", "--replicas", "--help"},
		"sexton completion ":          {"bash", "zsh"},
	} {
		cmd := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _sexton; printf '%s\n' "${COMPREPLY[@]}"`
		out, err := exec.Command("bash", append([]string{"-c", cmd, "bash", script}, strings.Split(line, " ")...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q completes to %q, want %q", line, got, want)
		}
	}
	if z := Zsh(tab); !strings.HasPrefix(z, "#compdef sexton\n") || !strings.Contains(z, "complete -F _sexton sexton") {
		t.Errorf("zsh script: %.80q", z)
	}
}
