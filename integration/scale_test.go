package integration

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/transport"
)

// scaleObjects is how many objects TestWipedFollowerCatchesUpBySnapshot
// loads: SEXTON_SCALE_OBJECTS, default a million.
func scaleObjects(t *testing.T) int {
	if s := os.Getenv("SEXTON_SCALE_OBJECTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("SEXTON_SCALE_OBJECTS=%q: want a positive count", s)
		}
		return n
	}
	return 1000000
}

// TestWipedFollowerCatchesUpBySnapshot: a million objects through a real
// three-master cluster (bench load: batched puts onto simulated holders),
// then a follower loses its whole data dir. It must come back by
// InstallSnapshot (its log behind the snapshot is long compacted away),
// and then, led by that node, the cluster must list every object: the
// snapshot round trip (take, persist, send, restore) lost nothing.
func TestWipedFollowerCatchesUpBySnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a million objects")
	}
	n := scaleObjects(t)
	c := startCluster(t, 3, "--raft-trailing-logs", "256", "--enable-debug")
	const prefix = "scale/"
	start := time.Now()
	out, err := execCommand(binary, "bench", "load", "--masters", strings.Join(c.addrs(), ","),
		"--objects", strconv.Itoa(n), "--prefix", prefix).CombinedOutput()
	if err != nil {
		t.Fatalf("bench load: %v\n%s", err, out)
	}
	t.Logf("loaded %d objects in %v", n, time.Since(start).Round(time.Second))

	// Every node snapshots now, so each one's log behind the snapshot is
	// compacted (256 trailing entries): the wiped follower cannot be
	// caught up from the log.
	for _, m := range c.nodes {
		resp, err := http.Post("http://"+m.httpAddr+"/debug/snapshot", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("snapshot on %s: HTTP %d", m.id, resp.StatusCode)
		}
	}
	leader := c.leader()
	f := c.follower()
	f.stop()
	if _, ok := f.wait(20 * time.Second); !ok {
		t.Fatalf("%s did not stop", f.id)
	}
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	lst, err := c.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	wiped := time.Now()
	f.start()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st, err := c.status(f)
		if err == nil && st.AppliedIndex >= lst.CommitIndex && st.Objects == lst.Objects {
			t.Logf("%s wiped, caught up to index %d (%d objects) in %v", f.id, st.AppliedIndex, st.Objects, time.Since(wiped).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not caught up after 5 min: status %+v (err %v), leader had commit %d and %d objects", f.id, st, err, lst.CommitIndex, lst.Objects)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(f.logText(), "Installed remote snapshot") {
		t.Fatalf("%s caught up without installing a snapshot: the test did not test the snapshot path", f.id)
	}

	// Led by the wiped node, the cluster still has every object. (Ask
	// whoever leads now: leadership may have moved while f was away.)
	deadline = time.Now().Add(time.Minute)
	for c.leader() != f {
		l := c.leader()
		ctx, cancel := ctxT(30 * time.Second)
		conn, err := transport.Dial(ctx, l.rpcAddr, c.cc())
		if err == nil {
			err = conn.Call(ctx, api.MethodRaftTransferLeadership, &api.RaftPeerRequest{ID: f.id, Address: f.raftAddr}, nil)
			conn.Close()
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("could not move leadership to %s (last error %v)", f.id, err)
		}
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	seen, cursor := 0, ""
	for {
		lctx, lcancel := ctxT(30 * time.Second)
		objs, next, err := c.lib().List(lctx, prefix, cursor, 1000)
		lcancel()
		if err != nil {
			t.Fatalf("list after %d objects: %v", seen, err)
		}
		for _, o := range objs {
			if want := fmt.Sprintf("%s%010d", prefix, seen); o.Key != want {
				t.Fatalf("object %d is %q, want %q", seen, o.Key, want)
			}
			seen++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if seen != n {
		t.Fatalf("the cluster led by the wiped follower lists %d objects, want %d", seen, n)
	}
}
