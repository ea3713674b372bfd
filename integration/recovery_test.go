package integration

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// A killed follower restarts and catches up, through a snapshot: the
// threshold is low so the leader truncates the log the follower missed.
func TestFollowerCatchesUpThroughSnapshot(t *testing.T) {
	c := startCluster(t, 3, "--raft-snapshot-threshold", "64", "--raft-trailing-logs", "16", "--raft-snapshot-interval", "200ms")
	cl := c.client(0)
	mountFake(t, cl, "snap", "p1")
	follower := c.follower()
	follower.kill()
	for i := 0; i < 300; i++ {
		ctx, cancel := ctxT(10 * time.Second)
		if _, err := putMeta(ctx, cl, fmt.Sprintf("catchup/%04d", i), "p1"); err != nil {
			cancel()
			t.Fatalf("put %d: %v", i, err)
		}
		cancel()
	}
	ctx, cancel := ctxT(10 * time.Second)
	var rr api.BatchRemoveResponse
	if err := cl.Call(ctx, api.MethodBatchRemove, &api.KeysRequest{Keys: []string{"catchup/0000", "catchup/0001"}}, &rr); err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(time.Second) // let the leader snapshot and truncate
	want, err := c.status(c.leader())
	if err != nil {
		t.Fatal(err)
	}
	follower.start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.status(follower)
		if err == nil && st.AppliedIndex >= want.CommitIndex && st.Objects == want.Objects && st.PendingTasks == want.PendingTasks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower did not catch up: %+v (want objects %d, tasks %d, index ≥ %d), err %v", st, want.Objects, want.PendingTasks, want.CommitIndex, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(follower.logText(), "snapshot") {
		t.Logf("note: follower log does not mention a snapshot install")
	}
	if want.Objects != 298 || want.PendingTasks != 2 {
		t.Fatalf("leader state: %d objects, %d tasks; want 298 and 2", want.Objects, want.PendingTasks)
	}
}

// A node whose log holds an entry of an unknown schema version halts at
// that entry instead of applying past it, and keeps halting there.
func TestUnknownVersionEntryHalts(t *testing.T) {
	c := startCluster(t, 1)
	cl := c.client(0)
	mountFake(t, cl, "halt", "p1")
	ctx, cancel := ctxT(10 * time.Second)
	if _, err := putMeta(ctx, cl, "before-halt", "p1"); err != nil {
		t.Fatal(err)
	}
	cancel()
	m := c.nodes[0]
	before, err := c.status(m)
	if err != nil {
		t.Fatal(err)
	}
	m.stop()
	// A Remove body claiming schema version 99.
	body, err := fsm.Encode(&fsm.Remove{V: fsm.RemoveV1, Keys: []string{"before-halt"}})
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), body...)
	patched := false
	for i := 0; i+3 < len(bad); i++ { // msgpack: fixstr "v" (0xa1 'v') then the value, fixint or uint8 (0xcc)
		if bad[i] == 0xa1 && bad[i+1] == 'v' {
			if bad[i+2] == 0xcc {
				bad[i+3] = 99
			} else {
				bad[i+2] = 99
			}
			patched = true
			break
		}
	}
	if !patched {
		t.Fatalf("could not find the version field in %x", body)
	}
	if _, err := fsm.Decode(bad); err == nil {
		t.Fatalf("patched entry still decodes; the test would prove nothing")
	}
	out, err := exec.Command(binary, "debug", "raft-append", "--data-dir", m.dir, "--hex", hex.EncodeToString(bad)).CombinedOutput()
	if err != nil {
		t.Fatalf("raft-append: %v: %s", err, out)
	}
	var appended uint64
	if _, err := fmt.Sscanf(string(out), "appended entry %d", &appended); err != nil {
		t.Fatalf("raft-append output %q: %v", out, err)
	}
	if appended <= before.AppliedIndex {
		t.Fatalf("appended entry %d is not after the applied index %d", appended, before.AppliedIndex)
	}
	for attempt := 0; attempt < 2; attempt++ {
		m.start()
		code, exited := m.wait(30 * time.Second)
		if !exited {
			t.Fatalf("attempt %d: node kept running past an entry of unknown version", attempt)
		}
		if code != 3 {
			t.Fatalf("attempt %d: exit code %d, want 3 (halt)", attempt, code)
		}
		// The halt names the entry it refused: the same one every time, so
		// the node never skipped past it.
		if n := strings.Count(m.logText(), fmt.Sprintf("halted: raft log entry %d:", appended)); n != attempt+1 {
			t.Fatalf("attempt %d: %d halts at entry %d in the log, want %d", attempt, n, appended, attempt+1)
		}
		if !strings.Contains(m.logText(), "unknown command schema version") {
			t.Fatalf("attempt %d: the log does not name the problem", attempt)
		}
	}
}
