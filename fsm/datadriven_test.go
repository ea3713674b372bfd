package fsm

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"sexton/api"
)

// The scenario tests are data-driven (github.com/cockroachdb/datadriven,
// after etcd-io/raft's testdata): each file under testdata/ is a sequence
// of blocks
//
//	verb arg=value flag ...
//	----
//	expected output
//	<blank line>
//
// run in order against one FSM. Every verb is one row of the verb tables
// (coreVerbs here, dfsVerbs, rebuildVerbs, jobVerbs beside it): its
// arguments and the handler that applies it and renders the outcome.
// `go test ./fsm -run TestScenarios/<file> -rewrite` rewrites the
// expected outputs (review the diff before keeping it).

// TestScenarios runs every data-driven file of testdata/ (the fuzz corpus
// is a directory and is not read) as a subtest named after the file: a new
// scenario is a new file, nothing to register.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no scenario files under testdata/")
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			d := &ddRunner{h: newHarness(t, DefaultRegistryCapacity)}
			datadriven.RunTest(t, path, d.run)
		})
	}
}

// verb is one row of a verb table.
type verb struct {
	// args are the verb's arguments as the files write them.
	args string
	run  func(d *ddRunner, t *testing.T, a ddArgs) string
}

// allVerbs is the language: every table's rows, a verb named twice being
// an error of the tables.
var allVerbs = func() map[string]verb {
	all := map[string]verb{}
	for _, table := range []map[string]verb{coreVerbs, dfsVerbs, rebuildVerbs, jobVerbs} {
		for name, v := range table {
			if _, dup := all[name]; dup {
				panic("data-driven verb " + name + " is in two tables")
			}
			all[name] = v
		}
	}
	return all
}()

type ddRunner struct {
	h *harness
}

// run applies one block: it finds the verb's row, hands it the arguments,
// and fails the test on an unknown verb, an argument the verb did not
// read, or an input section (no verb takes one).
func (d *ddRunner) run(t *testing.T, td *datadriven.TestData) string {
	t.Helper()
	v, ok := allVerbs[td.Cmd]
	if !ok {
		names := make([]string, 0, len(allVerbs))
		for name := range allVerbs {
			names = append(names, name)
		}
		slices.Sort(names)
		td.Fatalf(t, "unknown verb %q; the verbs are %s", td.Cmd, strings.Join(names, " "))
	}
	if td.Input != "" {
		td.Fatalf(t, "%s takes no input lines", td.Cmd)
	}
	a := newArgs(t, td)
	out := v.run(d, t, a)
	if unread := a.unread(); len(unread) > 0 {
		td.Fatalf(t, "%s does not take %s (it takes %s)", td.Cmd, strings.Join(unread, ", "), v.args)
	}
	return strings.TrimRight(out, "\n")
}

// ddArgs are one block's arguments; each must be read by the verb.
type ddArgs struct {
	t    *testing.T
	pos  string
	vals map[string]string
	read map[string]bool
}

func newArgs(t *testing.T, td *datadriven.TestData) ddArgs {
	a := ddArgs{t: t, pos: td.Pos, vals: map[string]string{}, read: map[string]bool{}}
	for _, arg := range td.CmdArgs {
		if _, dup := a.vals[arg.Key]; dup {
			td.Fatalf(t, "argument %s given twice", arg.Key)
		}
		if len(arg.Vals) > 1 {
			td.Fatalf(t, "argument %s: write a list as %s=a,b, not in parentheses", arg.Key, arg.Key)
		}
		a.vals[arg.Key] = ""
		if len(arg.Vals) == 1 {
			a.vals[arg.Key] = arg.Vals[0]
		}
	}
	return a
}

func (a ddArgs) fatalf(format string, args ...any) {
	a.t.Helper()
	a.t.Fatalf("%s: %s", a.pos, fmt.Sprintf(format, args...))
}

func (a ddArgs) unread() []string {
	var out []string
	for k := range a.vals {
		if !a.read[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func (a ddArgs) empty() bool { return len(a.vals) == 0 }

func (a ddArgs) has(k string) bool {
	_, ok := a.vals[k]
	a.read[k] = true
	return ok
}

// str is argument k, "" when absent.
func (a ddArgs) str(k string) string {
	a.read[k] = true
	return a.vals[k]
}

func (a ddArgs) u64(k string) uint64 {
	a.t.Helper()
	v, err := strconv.ParseUint(a.str(k), 10, 64)
	if err != nil {
		a.fatalf("argument %s=%q: %v", k, a.vals[k], err)
	}
	return v
}

// i64 is the integer argument k, 0 when absent.
func (a ddArgs) i64(k string) int64 {
	a.t.Helper()
	if !a.has(k) {
		return 0
	}
	v, err := strconv.ParseInt(a.str(k), 10, 64)
	if err != nil {
		a.fatalf("argument %s=%q: %v", k, a.vals[k], err)
	}
	return v
}

func (a ddArgs) f64(k string) float64 {
	a.t.Helper()
	v, err := strconv.ParseFloat(a.str(k), 64)
	if err != nil {
		a.fatalf("argument %s=%q: %v", k, a.vals[k], err)
	}
	return v
}

// list is argument k split at commas, nil when absent or empty.
func (a ddArgs) list(k string) []string {
	if a.str(k) == "" {
		return nil
	}
	return strings.Split(a.str(k), ",")
}

func (a ddArgs) segs(k string) []api.SegmentID {
	var out []api.SegmentID
	for _, s := range a.list(k) {
		out = append(out, api.SegmentID(s))
	}
	return out
}

// session is argument sess, "client:seq[:floor]" ("" or absent: no
// session).
func (a ddArgs) session() api.Session {
	a.t.Helper()
	spec := a.str("sess")
	if spec == "" {
		return api.Session{}
	}
	return parseSession(a, spec)
}

func parseSession(a ddArgs, spec string) api.Session {
	a.t.Helper()
	parts := strings.Split(spec, ":")
	s := api.Session{ClientID: parts[0]}
	var err error
	if len(parts) > 1 {
		s.Seq, err = strconv.ParseUint(parts[1], 10, 64)
	}
	if err == nil && len(parts) > 2 {
		s.Floor, err = strconv.ParseUint(parts[2], 10, 64)
	}
	if err != nil || len(parts) > 3 {
		a.fatalf("session %q: want client:seq[:floor]", spec)
	}
	return s
}

// inc is the incarnation low of the harness's cluster.
func (d *ddRunner) inc(low uint64) api.ObjectIncarnation {
	return api.ObjectIncarnation{High: d.h.cluster, Low: low}
}

// limit is argument limit, 0 (no limit) when absent.
func (a ddArgs) limit() int {
	if !a.has("limit") {
		return 0
	}
	return int(a.u64("limit"))
}
