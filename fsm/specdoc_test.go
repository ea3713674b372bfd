package fsm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSpecListsEveryCommand keeps the command table of docs/DESIGN.md §3
// in step with the codec's: every type byte the fsm decodes has its row,
// under its number and name, and the table lists nothing else. A command
// added without its row fails here, naming the row to write.
func TestSpecListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## 3. ")
	if start < 0 {
		t.Fatal("docs/DESIGN.md has no section \"## 3. \"")
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([A-Za-z]+)")
	listed := map[CommandType]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		n, _ := strconv.Atoi(m[1])
		if _, dup := listed[CommandType(n)]; dup {
			t.Errorf("docs/DESIGN.md §3 lists type %d twice", n)
		}
		listed[CommandType(n)] = m[2]
	}
	for i, s := range commands {
		if s == nil {
			continue
		}
		ct := CommandType(i)
		name, ok := listed[ct]
		switch {
		case !ok:
			t.Errorf("docs/DESIGN.md §3 has no row for command %d: add \"| %d | `%s{...}` | what it changes |\"", i, i, s.name)
		case name != s.name:
			t.Errorf("docs/DESIGN.md §3 calls command %d %s; the fsm calls it %s", i, name, s.name)
		}
		delete(listed, ct)
	}
	for n, name := range listed {
		t.Errorf("docs/DESIGN.md §3 lists %s as command %d, which the fsm does not decode", name, n)
	}
}
