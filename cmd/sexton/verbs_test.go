package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsck"
	"sexton/holder"
	"sexton/jsonout"
)

func TestVerbTable(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range verbs {
		if v.summary == "" {
			t.Errorf("%q has no summary", v.path)
		}
		if !slices.Contains(groups, v.group) {
			t.Errorf("%q: group %q is not one of %v", v.path, v.group, groups)
		}
		if n := btoi(v.setup != nil) + btoi(v.run != nil) + btoi(v.raw != nil); n != 1 {
			t.Errorf("%q: want exactly one of setup, run and raw, has %d", v.path, n)
		}
		if v.raw != nil && v.takes != 0 {
			t.Errorf("%q: a raw verb parses its own flags; it cannot take the shared ones", v.path)
		}
		if v.path != strings.Join(strings.Fields(v.path), " ") || v.path == "" {
			t.Errorf("%q: a path is words separated by one space", v.path)
		}
		if seen[v.path] {
			t.Errorf("%q listed twice", v.path)
		}
		seen[v.path] = true
	}
}

func TestUsageListsEveryVerb(t *testing.T) {
	usage := topUsage()
	for _, v := range verbs {
		if !strings.Contains(usage, v.usageLine()) {
			t.Errorf("the usage does not list %q", v.synopsis())
		}
	}
	for _, want := range []string{"SEXTON_MASTERS", "SEXTON_CLUSTER_TOKEN", "SEXTON_TIMEOUT", "4 outcome unknown", "2 usage"} {
		if !strings.Contains(usage, want) {
			t.Errorf("the usage does not mention %q", want)
		}
	}
}

// captureHelp runs args with helpOut captured. Nothing else may be
// printed, on stdout or stderr (no "flag: help requested").
func captureHelp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	old := helpOut
	helpOut = &buf
	defer func() { helpOut = old }()
	var err error
	stray, _ := captureStdout(t, func() error {
		errOut, _ := captureStderr(t, func() error { err = run(args); return nil })
		if len(errOut) > 0 {
			t.Errorf("%v printed on stderr: %q", args, errOut)
		}
		return nil
	})
	if len(stray) > 0 {
		t.Errorf("%v printed besides its help: %q", args, stray)
	}
	return buf.String(), err
}

func TestHelpOfEveryVerb(t *testing.T) {
	for _, v := range verbs {
		for _, flag := range []string{"--help", "-h"} {
			args := append(strings.Fields(v.path), flag)
			out, err := captureHelp(t, args...)
			if err != nil {
				t.Errorf("%v: %v", args, err)
				continue
			}
			if n := strings.Count(out, "usage: sexton "); n != 1 {
				t.Errorf("%v printed %d usages:\n%s", args, n, out)
			}
			if !strings.HasPrefix(out, "usage: sexton "+v.synopsis()) || !strings.Contains(out, v.summary) {
				t.Errorf("%v: want its synopsis and summary, got:\n%s", args, out)
			}
			if strings.Contains(out, "\nservers:\n") {
				t.Errorf("%v printed the top-level usage:\n%s", args, out)
			}
			if v.takes&clusterFlags != 0 && !strings.Contains(out, "-masters") {
				t.Errorf("%v does not list --masters:\n%s", args, out)
			}
		}
	}
	// help VERB is VERB --help.
	out, err := captureHelp(t, "help", "operator", "tasks")
	if err != nil || !strings.HasPrefix(out, "usage: sexton operator tasks") {
		t.Errorf("help operator tasks: %v\n%s", err, out)
	}
}

func TestGroupUsage(t *testing.T) {
	for _, g := range []string{"operator", "operator raft", "bench", "debug"} {
		out, err := captureHelp(t, append(strings.Fields(g), "--help")...)
		if err != nil {
			t.Errorf("%s --help: %v", g, err)
		}
		for _, v := range verbs {
			if strings.HasPrefix(v.path, g+" ") != strings.Contains(out, v.usageLine()) {
				t.Errorf("%s --help and %q:\n%s", g, v.path, out)
			}
		}
		// Alone, a group is a usage error that shows the group's usage.
		err = run(strings.Fields(g))
		var ue usageError
		if exitCode(err) != exitUsage || !asUsage(err, &ue) || !strings.Contains(ue.usage, "usage: sexton "+g+" COMMAND") {
			t.Errorf("%s alone: %v (exit %d)", g, err, exitCode(err))
		}
	}
}

func asUsage(err error, ue *usageError) bool {
	u, ok := err.(usageError)
	*ue = u
	return ok
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frob"},
		{"operator", "frob"},
		{"operator", "raft", "frob"},
		{"put"},
		{"put", "a", "b", "c"},
		{"get", "--no-such-flag", "k"},
		{"operator", "tasks", "extra"},
		{"operator", "dfs", "set-max-buckets", "many"},
		{"rm", "--if-incarnation", "nonsense", "k", "--masters", "127.0.0.1:1"},
		{"operator", "settings", "set", "--masters", "127.0.0.1:1"},
		// rm --all without its confirmation never reaches a master.
		{"rm", "--all", "--masters", "127.0.0.1:1"},
		{"rm", "--prefix", "p/", "k", "--masters", "127.0.0.1:1"},
		{"operator", "jobs", "cancel", "seven", "--masters", "127.0.0.1:1"},
		{"holder"},
	} {
		err := run(args)
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, code, err, exitUsage)
		}
	}
	var ue usageError
	if err := run([]string{"put"}); !asUsage(err, &ue) || !strings.HasPrefix(ue.usage, "usage: sexton put KEY") {
		t.Errorf("put alone shows %q, want put's usage", ue.usage)
	}
}

func TestExitCodes(t *testing.T) {
	if c := exitCode(api.Errorf(api.CodeOutcomeUnknown, "x")); c != exitOutcomeUnknown {
		t.Errorf("OUTCOME_UNKNOWN: exit %d", c)
	}
	if c := exitCode(api.Errorf(api.CodeObjectNotFound, "x")); c != exitFailed {
		t.Errorf("OBJECT_NOT_FOUND: exit %d", c)
	}
	// The master unit must not restart into a halt.
	unit, err := os.ReadFile("../../deploy/systemd/sexton-master@.service")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nRestartPreventExitStatus=%d\n", exitMasterHalted); !strings.Contains(string(unit), want) {
		t.Errorf("the master unit lacks %q", strings.TrimSpace(want))
	}
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkKeys fails on any object key of v that is not snake_case and on
// any null list.
func checkKeys(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("null")) {
		t.Errorf("%s: null in %s", name, b)
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				if !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", name, k)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var back any
	_ = json.Unmarshal(b, &back)
	walk(back)
}

func TestJSONKeysAreSnakeCase(t *testing.T) {
	inc := api.ObjectIncarnation{High: 1, Low: 2}
	obj := api.ObjectInfo{Key: "k", Incarnation: inc, Replicas: []api.ReplicaLocation{
		{ReplicaDescriptor: api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: "s"}, Endpoint: "e"},
		{ReplicaDescriptor: api.ReplicaDescriptor{DFS: &api.DFSDescriptor{Path: "p"}}},
	}}
	now := time.Now()
	tasks := api.ListTasksResponse{Tasks: []api.LocalDeleteTask{{Key: "k", Created: 1}}, Total: 1,
		Progress: []api.TaskProgress{{State: api.TaskRetrying, Holder: "h", Attempts: 2, LastError: "e", LastGiven: 3}}}
	checkKeys(t, "stat", jsonout.StatOf(api.StatResponse{Object: obj, PendingPut: &inc}, true, tasks, now))
	checkKeys(t, "stat removed", jsonout.StatOf(api.StatResponse{}, false, tasks, now))
	checkKeys(t, "rm --wait", jsonout.Rm{Replicas: jsonout.TasksOf(tasks, now).Tasks})
	checkKeys(t, "ls", jsonout.Objects([]api.ObjectInfo{obj}))
	checkKeys(t, "ls empty", jsonout.Objects(nil))
	checkKeys(t, "operator tasks", jsonout.TasksOf(tasks, now))
	checkKeys(t, "operator tasks empty", jsonout.TasksOf(api.ListTasksResponse{}, now))
	marker := uint64(7)
	checkKeys(t, "operator segments", jsonout.Segments([]api.SegmentInfo{{ID: "s", Capabilities: []api.Capability{api.CapObjectTombstoneV1}}},
		[]api.RefusedMount{{Segment: "late", Endpoint: "h:1", MarkerCluster: &marker, Reason: "SEGMENT_NEEDS_ADOPTION: x", LastAttempt: 1, Attempts: 2}}))
	checkKeys(t, "operator segments empty", jsonout.Segments(nil, nil))
	checkKeys(t, "status", []api.StatusResponse{{}})
	checkKeys(t, "list-peers", []api.RaftPeer{{}})
	checkKeys(t, "settings", api.SettingsResponse{})
	checkKeys(t, "dfs status", api.DFSStatusResponse{DFSConfigResponse: api.DFSConfigResponse{Env: []string{}}, Units: []api.DFSUnitStatus{{}}, StrayFiles: []string{}})
	checkKeys(t, "fsck", &fsck.Report{Segments: []fsck.Segment{{Orphans: []fsck.Ref{{Key: "k"}}, Missing: []fsck.Ref{}}}})
	checkKeys(t, "holder inspect", jsonout.InspectOf(holder.InspectReport{Buckets: []holder.BucketStat{{ID: 1}}}))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
