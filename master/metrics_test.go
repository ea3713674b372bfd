package master

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"sexton/api"
	"sexton/internal/testutil"
)

// samples gathers n's registry and returns the samples of metric name
// whose labels include every pair in labels.
func samples(t testing.TB, n *Node, name string, labels ...string) []*dto.Metric {
	t.Helper()
	fams, err := n.metrics.reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []*dto.Metric
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				out = append(out, m)
			}
		}
	}
	return out
}

// gauge reads one sample of a gauge from n's registry: the sample whose
// labels include every pair in labels. ok is false when there is none.
func gauge(t testing.TB, n *Node, name string, labels ...string) (float64, bool) {
	t.Helper()
	ms := samples(t, n, name, labels...)
	if len(ms) == 0 {
		return 0, false
	}
	return ms[0].GetGauge().GetValue(), true
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// The gauges the alerts watch: who leads, the term, the age of the oldest
// pending delete task of a segment (on every node, from replicated state),
// and the leader's view of each holder's heartbeat age.
func TestAlertGauges(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.waitLeader(t)
	h := tc.mountHolder(t, "seg-a", "p1")
	tc.put(t, "k1", 100, 1)
	if err := tc.remove("k1"); err != nil {
		t.Fatal(err)
	}
	var leaders int
	for _, n := range tc.nodes {
		if v, _ := gauge(t, n, "sexton_raft_is_leader"); v == 1 {
			leaders++
		}
		if v, ok := gauge(t, n, "sexton_raft_leader_known"); !ok || v != 1 {
			t.Errorf("%s: sexton_raft_leader_known = %v (present %v), want 1", n.cfg.ID, v, ok)
		}
		if v, _ := gauge(t, n, "sexton_raft_term"); v != float64(leader.raft.CurrentTerm()) {
			t.Errorf("%s: sexton_raft_term = %v, want the leader's %d", n.cfg.ID, v, leader.raft.CurrentTerm())
		}
		if v, ok := gauge(t, n, "sexton_master_halted"); !ok || v != 0 {
			t.Errorf("%s: sexton_master_halted = %v (present %v), want 0", n.cfg.ID, v, ok)
		}
		if v, ok := gauge(t, n, "sexton_build_info", "go_version", runtime.Version()); !ok || v != 1 {
			t.Errorf("%s: sexton_build_info{go_version=%q} = %v (present %v), want 1", n.cfg.ID, runtime.Version(), v, ok)
		}
		if b := n.status().Build; b == nil || b.GoVersion != runtime.Version() || b.Commit == "" {
			t.Errorf("%s: status build = %+v, want this build (%s)", n.cfg.ID, b, runtime.Version())
		}
	}
	if leaders != 1 {
		t.Fatalf("%d nodes report sexton_raft_is_leader 1, want 1", leaders)
	}

	// Nobody fetches the task: its age grows on every node that applied it.
	time.Sleep(300 * time.Millisecond)
	for _, n := range tc.nodes {
		testutil.WaitFor(t, harnessTimeout, func() bool {
			v, ok := gauge(t, n, "sexton_delete_task_oldest_age_seconds", "segment", "seg-a")
			return ok && v >= 0.3 && v < 30
		}, n.cfg.ID+" reports the task's age")
	}

	// The holder heartbeats: the leader reports a small age, followers nothing.
	if v, ok := gauge(t, leader, "sexton_holder_heartbeat_age_seconds", "segment", "seg-a"); !ok || v > 1 {
		t.Fatalf("leader heartbeat age = %v (present %v), want present and < 1s", v, ok)
	}
	for _, n := range tc.nodes {
		if n == leader {
			continue
		}
		if _, ok := gauge(t, n, "sexton_holder_heartbeat_age_seconds"); ok {
			t.Errorf("follower %s exports a heartbeat age; only the leader knows liveness", n.cfg.ID)
		}
	}
	h.die()
	// On the node that leads now: under make test's load an election can
	// come between (a new leader counts the age from its term's start).
	testutil.WaitFor(t, harnessTimeout, func() bool {
		v, ok := gauge(t, tc.waitLeader(t), "sexton_holder_heartbeat_age_seconds", "segment", "seg-a")
		return ok && v > 1
	}, "the dead holder's heartbeat age passes 1s")

	// Acking the task drops the age: nothing is pending on the segment.
	tasks := h.fetch(t, 10, time.Second)
	h.ack(t, tasks, ackAll(api.AckRemoved))
	for _, n := range tc.nodes {
		testutil.WaitFor(t, harnessTimeout, func() bool {
			_, ok := gauge(t, n, "sexton_delete_task_oldest_age_seconds", "segment", "seg-a")
			return !ok
		}, n.cfg.ID+" drops the age after the ack")
	}
}

// A node that refuses an entry reports sexton_master_halted 1 (as long as
// its process lives; the default Halt exits 3).
func TestHaltedGauge(t *testing.T) {
	var halts atomic.Int32
	tc := startCluster(t, 1, func(c *Config) { c.Halt = func(error) { halts.Add(1) } })
	n := tc.waitLeader(t)
	if v, _ := gauge(t, n, "sexton_master_halted"); v != 0 {
		t.Fatalf("sexton_master_halted = %v before any refusal", v)
	}
	// What the adapter calls on a refused entry (it then blocks forever,
	// which a test cannot leave behind).
	n.rfsm.halt(errors.New("raft log entry 99: unknown command type"))
	testutil.WaitFor(t, harnessTimeout, func() bool { return halts.Load() == 1 }, "the refusal reaches Halt")
	if v, _ := gauge(t, n, "sexton_master_halted"); v != 1 {
		t.Fatalf("sexton_master_halted = %v after a refused entry, want 1", v)
	}
}
