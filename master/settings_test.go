package master

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
)

// byNode gives each node of a test cluster its own registry capacity flag
// (m1, m2, m3 in order), as during a rolling flag change.
func byNode(caps ...int) func(*Config) {
	return func(c *Config) {
		var i int
		fmt.Sscanf(c.ID, "m%d", &i)
		c.Settings.RegistryCapacity = caps[i-1]
	}
}

// TestSettingsBootstrapFromTheFirstLeadersFlags: a new cluster takes its
// settings from the flags of its first leader, every node applies them,
// Status shows them, and a node whose flag disagrees says so naming both
// values.
func TestSettingsBootstrapFromTheFirstLeadersFlags(t *testing.T) {
	flags := []int{7, 9, 11}
	tc := startCluster(t, 3, byNode(flags...))
	leader := tc.waitLeader(t)
	want := leader.cfg.Settings.RegistryCapacity
	tc.waitRegistryCapacity(t, want, "every node applied the bootstrap settings")
	var got api.SettingsResponse
	if err := tc.call(api.MethodSettingsGet, &api.Empty{}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Settings.RegistryCapacity != want || got.Settings.MaxSessions == 0 || got.Settings.SessionTTLMillis == 0 {
		t.Fatalf("SettingsGet %+v, want registry capacity %d and the session defaults filled in", got.Settings, want)
	}
	for _, n := range tc.nodes {
		if st := n.status(); st.RegistryCap != want {
			t.Fatalf("%s status shows registry capacity %d, want the replicated %d", n.cfg.ID, st.RegistryCap, want)
		}
		if n.cfg.Settings.RegistryCapacity == want {
			continue
		}
		msg := fmt.Sprintf("registry-capacity: flag %d, replicated %d", n.cfg.Settings.RegistryCapacity, want)
		testutil.WaitFor(t, 3*time.Second, func() bool {
			return strings.Contains(tc.logs.String(), msg)
		}, n.cfg.ID+" warns about its flag")
	}
}

// TestRollingCapacityChangeCannotSplitNodes runs three nodes whose
// registry capacity flags all differ from each other and from the
// replicated value. A BatchRemove that fills the replicated registry is
// answered by the leader, and every node's state agrees with that answer:
// the flags change nothing Apply does.
func TestRollingCapacityChangeCannotSplitNodes(t *testing.T) {
	tc := startCluster(t, 3, byNode(1, 5, 100))
	h := tc.mountHolder(t, "seg-a", "")
	var set api.SettingsResponse
	if err := tc.call(api.MethodSettingsSet, &api.SettingsSetRequest{Settings: api.Settings{RegistryCapacity: 2}}, &set); err != nil {
		t.Fatal(err)
	}
	if set.Settings.RegistryCapacity != 2 {
		t.Fatalf("SettingsSet answered %+v", set.Settings)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		if ps := tc.put(t, k, 1, 1); ps.Replicas[0].Segment != h.Seg {
			t.Fatalf("placed on %v", ps.Replicas)
		}
	}
	var resp api.BatchRemoveResponse
	if err := tc.call(api.MethodBatchRemove, &api.BatchRemoveRequest{Keys: []string{"k1", "k2", "k3"}}, &resp); err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{}
	for _, r := range resp.Results {
		switch {
		case r.Err == nil:
			removed[r.Key] = true
		case r.Err.Code != api.CodeLocalDeleteRegistryFull:
			t.Fatalf("remove %s: %v", r.Key, r.Err)
		}
	}
	if len(removed) != 2 || removed["k3"] {
		t.Fatalf("removed %v under a replicated capacity of 2, want k1 and k2", removed)
	}
	leaderIndex := tc.waitLeader(t).fsm.Stats().AppliedIndex
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if n.fsm.Stats().AppliedIndex < leaderIndex {
				return false
			}
		}
		return true
	}, "every node applied the remove")
	for _, n := range tc.nodes {
		if st := n.fsm.Stats(); st.PendingTasks != 2 {
			t.Errorf("%s (flag %d) holds %d tasks, the leader's answer made 2", n.cfg.ID, n.cfg.Settings.RegistryCapacity, st.PendingTasks)
		}
		for _, k := range []string{"k1", "k2", "k3"} {
			_, err := n.fsm.Get(k)
			if exists := err == nil; exists == removed[k] {
				t.Errorf("%s (flag %d): %s exists=%v, but the leader answered removed=%v", n.cfg.ID, n.cfg.Settings.RegistryCapacity, k, exists, removed[k])
			}
		}
		if s, _ := n.fsm.Settings(); s.RegistryCapacity != 2 {
			t.Errorf("%s applies registry capacity %d, want the replicated 2", n.cfg.ID, s.RegistryCapacity)
		}
	}
	// The capacity cannot drop below what is pending.
	err := tc.call(api.MethodSettingsSet, &api.SettingsSetRequest{Settings: api.Settings{RegistryCapacity: 1}}, &set)
	if api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("capacity 1 below 2 pending tasks: %v, want INVALID_PARAMS", err)
	}
}

// waitRegistryCapacity waits until every node has applied Settings with
// registry capacity want; what names the wait.
func (tc *testCluster) waitRegistryCapacity(t *testing.T, want int, what string) {
	t.Helper()
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if s, ok := n.fsm.Settings(); !ok || s.RegistryCapacity != want {
				return false
			}
		}
		return true
	}, what)
}
