package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sexton/deploy/check/image"
	"sexton/deploy/check/internal/sextonbin"
)

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct{ op, args string }

// dockerfileStages splits a Dockerfile into its stages' instructions.
func dockerfileStages(t *testing.T, text string) [][]instruction {
	t.Helper()
	var stages [][]instruction
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		op, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(op), strings.TrimSpace(args)}
		if in.op == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.op != "ARG" {
				t.Fatalf("Dockerfile: %s before the first FROM", in.op)
			}
			return
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		flush()
	}
	flush()
	return stages
}

func find(stage []instruction, op string) []string {
	var out []string
	for _, in := range stage {
		if in.op == op {
			out = append(out, in.args)
		}
	}
	return out
}

// TestDockerfile: the Dockerfile builds the image make image builds: a
// static binary from the Go release go.mod names, stamped with the
// version variables the Makefile sets, into a final stage with no shell
// (nothing RUN there, an exec-form entrypoint) that runs as the non-root
// user the chart's securityContext names; .dockerignore keeps build
// outputs and VCS data out of the context.
func TestDockerfile(t *testing.T) {
	root := sextonbin.Root(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	stages := dockerfileStages(t, read("Dockerfile"))
	if len(stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, want 2 (build, final)", len(stages))
	}
	build, final := stages[0], stages[1]

	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(read("go.mod"))
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	if from := find(build, "FROM"); len(from) != 1 || !strings.HasPrefix(from[0], "golang:"+goVersion[1]+" ") {
		t.Errorf("build stage FROM %q, want golang:%s (go.mod's go %s)", from, goVersion[1], goVersion[1])
	}
	var goBuild string
	for _, r := range find(build, "RUN") {
		if strings.Contains(r, "go build") {
			goBuild = r
		}
	}
	if !strings.Contains(goBuild, "CGO_ENABLED=0") || !strings.Contains(goBuild, "./cmd/sexton") {
		t.Errorf("build stage's go build %q: want CGO_ENABLED=0 ... ./cmd/sexton (a static binary)", goBuild)
	}
	xVar := regexp.MustCompile(`-X '?(sexton/[A-Za-z0-9_/.]+)=`)
	vars := func(s string) []string {
		var out []string
		for _, m := range xVar.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	makeLD := regexp.MustCompile(`(?m)^LDFLAGS\s*:=(.*)$`).FindStringSubmatch(read("Makefile"))
	if makeLD == nil {
		t.Fatal("Makefile has no LDFLAGS := line")
	}
	if got, want := vars(goBuild), vars(makeLD[1]); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("Dockerfile's go build sets %v, the Makefile's LDFLAGS %v", got, want)
	}

	if from := find(final, "FROM"); len(from) != 1 || !strings.Contains(from[0], "distroless/static") {
		t.Errorf("final stage FROM %q, want a distroless/static image (no shell, no libc)", from)
	}
	if runs := find(final, "RUN"); len(runs) > 0 {
		t.Errorf("final stage RUNs %q: it has no shell to run them", runs)
	}
	if user := find(final, "USER"); len(user) != 1 || user[0] != "65532:65532" || image.UID != 65532 || image.GID != 65532 {
		t.Errorf("final stage USER %q, want the image's %d:%d", user, image.UID, image.GID)
	}
	var entry []string
	if e := find(final, "ENTRYPOINT"); len(e) != 1 || json.Unmarshal([]byte(e[0]), &entry) != nil {
		t.Errorf("ENTRYPOINT %q, want the exec form (a JSON array: no shell runs it)", e)
	}
	if !slices.Equal(entry, []string{"/" + image.BinPath}) {
		t.Errorf("ENTRYPOINT %q, want [/%s] as make image's", entry, image.BinPath)
	}
	if !slices.ContainsFunc(find(final, "COPY"), func(c string) bool { return strings.HasSuffix(c, " /"+image.BinPath) }) {
		t.Errorf("final stage copies no binary to /%s", image.BinPath)
	}
	if w := find(final, "WORKDIR"); len(w) != 1 || w[0] != "/"+image.DataPath {
		t.Errorf("final stage WORKDIR %q, want /%s", w, image.DataPath)
	}

	ignored := strings.Fields(read(".dockerignore"))
	for _, p := range []string{".git", "bin"} {
		if !slices.Contains(ignored, p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
}
