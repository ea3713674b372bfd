package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runSexton runs the binary to its end and returns its output and exit
// code.
func runSexton(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("sexton %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", 0
}

// withoutFlag is args without flag and its value.
func withoutFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// TestMigrateLogStoreRolling: a three-master cluster on boltdb moves to
// raft-wal one master at a time with `operator raft migrate-log-store`,
// each started again without --raft-log-store; every master catches up
// and the cluster keeps every object and takes new ones. The command
// refuses a running master; a master started with --raft-log-store
// boltdb on its migrated data dir refuses to start, naming the command;
// and a master moved back to boltdb, started without the flag, says it
// keeps boltdb and catches up.
func TestMigrateLogStoreRolling(t *testing.T) {
	c := startCluster(t, 3, "--raft-log-store", "boltdb", "--raft-snapshot-threshold", "64", "--raft-trailing-logs", "16", "--raft-snapshot-interval", "200ms")
	cl := c.client(0)
	mountFake(t, cl, "mig", "p1")
	n := 0
	put := func(k int) {
		t.Helper()
		for range k {
			ctx, cancel := ctxT(10 * time.Second)
			_, err := putMeta(ctx, cl, fmt.Sprintf("mig/%04d", n), "p1")
			cancel()
			if err != nil {
				t.Fatalf("put %d: %v", n, err)
			}
			n++
		}
	}
	put(100)

	if out, code := runSexton(t, "operator", "raft", "migrate-log-store", "--data-dir", c.nodes[0].dir, "--to", "wal"); code != 1 || !strings.Contains(out, "stop the node") {
		t.Fatalf("migrating a running master: exit %d\n%s", code, out)
	}

	caughtUp := func(m *masterNode, what string) {
		t.Helper()
		want, err := c.status(c.leader())
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := c.status(m)
			if err == nil && st.AppliedIndex >= want.CommitIndex && st.Objects == want.Objects {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s did not catch up: %+v (want objects %d, index ≥ %d), err %v", what, m.id, st, want.Objects, want.CommitIndex, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	migrate := func(m *masterNode, to, from string) {
		t.Helper()
		m.stop()
		out, code := runSexton(t, "operator", "raft", "migrate-log-store", "--data-dir", m.dir, "--to", to)
		if code != 0 || !strings.Contains(out, "verified in the "+to+" store") {
			t.Fatalf("migrate %s to %s: exit %d\n%s", m.id, to, code, out)
		}
		t.Logf("%s → %s:\n%s", m.id, to, out)
		old := "raft.db"
		if from == "wal" {
			old = "raft-wal"
		}
		if aside, _ := filepath.Glob(filepath.Join(m.dir, old+".migrated-*")); len(aside) != 1 {
			t.Fatalf("%s: the %s store is not kept aside: %v", m.id, from, aside)
		}
		m.args = withoutFlag(m.args, "--raft-log-store")
		m.start()
		caughtUp(m, "after its migration to "+to)
		put(20)
	}
	for _, m := range c.nodes {
		migrate(m, "wal", "boltdb")
		if _, err := os.Stat(filepath.Join(m.dir, "raft-wal")); err != nil {
			t.Fatalf("%s: %v", m.id, err)
		}
	}

	m := c.nodes[0]
	m.stop()
	out, code := runSexton(t, append(append([]string{}, m.args...), "--raft-log-store", "boltdb")...)
	if code != 1 || !strings.Contains(out, "migrate-log-store") {
		t.Fatalf("a master started with --raft-log-store boltdb on a raft-wal data dir: exit %d\n%s", code, tail(out, 2000))
	}
	m.start()
	caughtUp(m, "after the refused start")

	migrate(m, "boltdb", "wal")
	if !strings.Contains(m.logText(), "data dir has raft.db: keeping the boltdb log store") {
		t.Fatalf("%s, back on boltdb without the flag, did not say it keeps boltdb", m.id)
	}
	for _, m := range c.nodes {
		caughtUp(m, "at the end")
	}
	st, err := c.status(c.leader())
	if err != nil {
		t.Fatal(err)
	}
	if st.Objects != n {
		t.Fatalf("leader has %d objects, %d were put", st.Objects, n)
	}
}
