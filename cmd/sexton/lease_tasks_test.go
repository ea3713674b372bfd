package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/jsonout"
)

// TestTasksWithheldByReadLease: a key read just before its remove has its
// delete task held back by the read lease; operator tasks and rm --wait
// say so, with the lease's end, instead of "pending, attempts 0".
func TestTasksWithheldByReadLease(t *testing.T) {
	_, m := devCluster(t)
	value := valueFile(t, []byte("hello"))
	quiet := func(args ...string) {
		t.Helper()
		if _, err := captureStdout(t, func() error { return run(append(args, m...)) }); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for _, k := range []string{"l/1", "l/2"} {
		quiet("put", k, value)
		quiet("get", k) // leases the incarnation for the lease TTL (10s)
	}
	quiet("rm", "l/1")

	out, err := captureStdout(t, func() error { return run(append([]string{"operator", "tasks", "--json"}, m...)) })
	if err != nil {
		t.Fatal(err)
	}
	var tasks jsonout.Tasks
	if err := json.Unmarshal(out, &tasks); err != nil {
		t.Fatal(err)
	}
	if len(tasks.Tasks) != 1 || tasks.Tasks[0].State != api.TaskLeased || time.Until(time.Unix(0, tasks.Tasks[0].LeaseEnd)) < time.Second {
		t.Fatalf("operator tasks --json = %s, want the one task leased with its lease's end seconds ahead", out)
	}
	text, err := captureStdout(t, func() error { return run(append([]string{"operator", "tasks"}, m...)) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "withheld by a read lease until ") {
		t.Fatalf("operator tasks prints\n%s\nwant the task withheld by a read lease until its end", text)
	}

	// rm --wait runs out while the lease holds; its table says why.
	var werr error
	stdout, _ := captureStdout(t, func() error {
		_, _ = captureStderr(t, func() error {
			werr = run(append([]string{"rm", "l/2", "--wait", "500ms"}, m...))
			return nil
		})
		return nil
	})
	if werr == nil || !strings.Contains(string(stdout), "withheld by a read lease until ") {
		t.Fatalf("rm --wait: %v, printed\n%s\nwant it to run out with the task withheld by a read lease", werr, stdout)
	}
}
