package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
)

// The HTTP endpoints an operator scrapes and probes, on a cluster running
// raft-wal: /readyz on every node once a leader is known and applied,
// /metrics with Raft state, registry occupancy and pending tasks by
// segment, /v1/status as JSON. Then a full restart keeps the data.
func TestHTTPEndpointsAndWALRestart(t *testing.T) {
	c := startCluster(t, 3, "--raft-log-store", "wal")
	cl := c.client(0)
	h := mountFake(t, cl, "http", "p1")
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	if _, err := putMeta(ctx, cl, "http/k", "p1"); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, c, "http/k")
	for _, m := range c.nodes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, body := testutil.HTTPGet(t, nil, "http://"+m.httpAddr+"/readyz")
			if code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s /readyz: %d %s", m.id, code, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code, _ := testutil.HTTPGet(t, nil, "http://"+m.httpAddr+"/healthz"); code != 200 {
			t.Fatalf("%s /healthz: %d", m.id, code)
		}
	}
	leader := c.leader()
	_, metrics := testutil.HTTPGet(t, nil, "http://"+leader.httpAddr+"/metrics")
	for _, want := range []string{`sexton_raft_state{state="Leader"} 1`, "sexton_registry_occupancy_ratio 2e-05",
		fmt.Sprintf(`sexton_pending_tasks{segment="%s"} 1`, h.seg), "sexton_raft_commit_seconds_count", `sexton_rpc_seconds_count{method="Remove"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("leader /metrics lacks %q", want)
		}
	}
	_, status := testutil.HTTPGet(t, nil, "http://"+leader.httpAddr+"/v1/status")
	if !strings.Contains(status, `"state":"Leader"`) || !strings.Contains(status, `"pending_tasks":1`) {
		t.Fatalf("/v1/status: %s", status)
	}
	h.close()
	for _, m := range c.nodes {
		m.stop()
	}
	for _, m := range c.nodes {
		m.start()
	}
	c.waitLeader(30 * time.Second)
	if got := allTasks(t, cl); len(got) != 1 || got[0].Key != "http/k" {
		t.Fatalf("after a full restart on raft-wal: tasks %+v", got)
	}
	if err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: "http/k"}, &api.GetResponse{}); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("removed object visible after restart: %v", err)
	}
}
