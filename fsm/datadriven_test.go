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
// run in order against one FSM. Every verb is one row of the verb table
// (verbs): its arguments and the handler that applies it and renders the
// outcome.
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

// verbs is the language: one row per verb, its arguments and its handler
// (datadriven_verbs_test.go, datadriven_dfs_test.go,
// datadriven_rebuild_test.go, datadriven_jobs_test.go).
var verbs = map[string]verb{
	// Objects, segments, tasks, sessions and settings.
	"epoch":       {"cluster=N", (*ddRunner).epoch},
	"mount":       {"client=C seg=S [caps=tomb|none|cap,...] [pool=P] [ep=E] [process=P] [marker=N]", (*ddRunner).mount},
	"unmount":     {"seg=S epoch=N", (*ddRunner).unmount},
	"putstart":    {"key=K segs=s1,... [ifabsent] [sess=c:seq]", (*ddRunner).putstart},
	"put":         {"key=K segs=s1,... [ifabsent] (PutStart, then PutEnd)", (*ddRunner).put},
	"putend":      {"key=K inc=N [sess=c:seq]", (*ddRunner).putend},
	"revoke":      {"key=K inc=N [sess=c:seq]", (*ddRunner).revoke},
	"remove":      {"keys=a,b [if=low,...] [sess=c:seq] [spans=sess/n;...]", (*ddRunner).remove},
	"woke":        {"(whose long polls the last entry concerns)", (*ddRunner).wokeVerb},
	"tick":        {"ms=N (advances the clock the next entries carry)", (*ddRunner).tick},
	"sessions":    {"", (*ddRunner).sessions},
	"ack":         {"seg=S epoch=N results=id[/key/low]:removed|already|stale|retry|bad,...", (*ddRunner).ackVerb},
	"fetch":       {"seg=S epoch=N [limit=N]", (*ddRunner).fetchVerb},
	"drop":        {"seg=S epoch=N refs=key@low,...", (*ddRunner).drop},
	"droptomb":    {"seg=S epoch=N refs=key@low,...", (*ddRunner).droptomb},
	"replicas":    {"seg=S epoch=N [after=K] [limit=N]", (*ddRunner).replicas},
	"notlive":     {"seg=S epoch=N refs=key@low,...", (*ddRunner).notlive},
	"get":         {"key=K [putid]", (*ddRunner).get},
	"stat":        {"key=K", (*ddRunner).stat},
	"tasks":       {"[seg=S]", (*ddRunner).tasks},
	"segments":    {"", (*ddRunner).segments},
	"retire":      {"seg=S by=B reason=R", (*ddRunner).retire},
	"restore":     {"(a snapshot written and read back)", (*ddRunner).restoreVerb},
	"reserve":     {"count=N ms=N", (*ddRunner).reserve},
	"commitbatch": {"items=key:inc:seg,... [sess=c:seq]", (*ddRunner).commitbatch},
	"commit":      {"key=K inc=N segs=s1,... [ifabsent] [sess=c:seq]", (*ddRunner).commit},
	"stats":       {"", (*ddRunner).stats},
	"settings":    {"[capacity=N ttl_ms=N max_sessions=N max_results=N sess=c:seq] (none: the effective settings)", (*ddRunner).settings},

	// The batch and DFS commands.
	"startbatch":    {"items=key:place[:size],... [sess=c:seq] (place: dfs, or segments joined by +)", (*ddRunner).startbatch},
	"endbatch":      {"items=key@inc,... [sess=c:seq]", (*ddRunner).endbatch},
	"dfsconfigure":  {"alloc=bucket|shard [max_buckets=N] [high=0.9 low=0.7] [noevict]", (*ddRunner).dfsconfigure},
	"dfsput":        {"key=K size=N (PutStart and PutEnd of a DFS-only object)", (*ddRunner).dfsput},
	"dfsstart":      {"key=K size=N (PutStart of a DFS-only object)", (*ddRunner).dfsstart},
	"dfstouch":      {"keys=a,b (DFSTouch of the objects' DFS entries)", (*ddRunner).dfstouch},
	"dfsevict":      {"(DFSEvict with the plan the leader would make now)", (*ddRunner).dfsevict},
	"dfsfileops":    {"(the file work the state waits for)", (*ddRunner).dfsfileops},
	"dfsfileop":     {"kind=create|delete unit=N [fail]", (*ddRunner).dfsfileop},
	"dfsmaxbuckets": {"max=N", (*ddRunner).dfsmaxbuckets},
	"dfsmarklost":   {"unit=N", (*ddRunner).dfsmarklost},
	"dfsstats":      {"(the allocator's counters)", (*ddRunner).dfsstats},
	"dfsmarks":      {"(the removal records the leader owes the journal)", (*ddRunner).dfsmarks},
	"dfsmarked":     {"[n=N] (DFSMarked of the first N queued marks; all)", (*ddRunner).dfsmarked},
	"dfsmarkbound":  {"n=N (lowers the queue's bound to N marks for this file)", (*ddRunner).dfsmarkbound},

	// A rebuild. Incarnations name the rebuild's cluster (the harness's
	// cluster follows a successful begin); a replica dfs-U-OFF-SIZE is a
	// DFS replica in bucket U at OFF of SIZE bytes.
	"rebuild-begin":        {"cluster=N floor=F segs=s1,s2[:nocaps] [finish]", (*ddRunner).rebuildBegin},
	"rebuild-adopt":        {"[cluster=N] objs=key@low:seg+seg,... dels=seg/key@low,...", (*ddRunner).rebuildAdopt},
	"rebuild-close":        {"cluster=N", (*ddRunner).rebuildClose},
	"rebuild-status":       {"", (*ddRunner).rebuildStatus},
	"rebuild-memory-bound": {"n=N (lowers the removal memory's bound for the test)", (*ddRunner).rebuildMemoryBound},

	// Bulk-delete jobs.
	"job-start":  {"prefix=P [sess=c:seq]", (*ddRunner).jobStart},
	"job-step":   {"job=ID [after=C] [keys=a,b] [last] [pause] (a step as given), or job=ID auto=N (the leader's step: the fsm's candidates)", (*ddRunner).jobStep},
	"job-cancel": {"job=ID [sess=c:seq]", (*ddRunner).jobCancel},
	"jobs":       {"", (*ddRunner).jobs},
}

type ddRunner struct {
	h *harness
}

// run applies one block: it finds the verb's row, hands it the arguments,
// and fails the test on an unknown verb, an argument the verb did not
// read, or an input section (no verb takes one).
func (d *ddRunner) run(t *testing.T, td *datadriven.TestData) string {
	t.Helper()
	v, ok := verbs[td.Cmd]
	if !ok {
		names := make([]string, 0, len(verbs))
		for name := range verbs {
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
	return parsedArg(a, k, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) })
}

// i64 is the integer argument k, 0 when absent.
func (a ddArgs) i64(k string) int64 {
	a.t.Helper()
	if !a.has(k) {
		return 0
	}
	return parsedArg(a, k, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
}

func (a ddArgs) f64(k string) float64 {
	a.t.Helper()
	return parsedArg(a, k, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// parsedArg is argument k as parse reads it; a value it refuses fails the
// test.
func parsedArg[T any](a ddArgs, k string, parse func(string) (T, error)) T {
	a.t.Helper()
	v, err := parse(a.str(k))
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
