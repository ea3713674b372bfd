package master

import (
	"fmt"
	"strings"
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"

	"sexton/raftio"
)

// histogram sums the sample counts and sums of histogram name in n's
// registry over the samples whose labels include every pair in labels.
func histogram(t testing.TB, n *Node, name string, labels ...string) (count uint64, sum float64) {
	t.Helper()
	for _, m := range samples(t, n, name, labels...) {
		count += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

// Raft's own timings of a commit reach /metrics through Config.Collectors:
// each committed entry is one log write on the leader, one on each
// follower, an AppendEntries round trip to each follower, and a dispatch
// to commit. go-metrics' sink is process-wide, so other tests' clusters
// may add samples too: the counts are lower bounds.
func TestRaftTimingsTakeACommitApart(t *testing.T) {
	rt := raftio.NewRaftTimings()
	rt.Install()
	t.Cleanup(func() {
		cfg := gometrics.DefaultConfig("")
		cfg.EnableRuntimeMetrics = false
		_, _ = gometrics.NewGlobal(cfg, &gometrics.BlackholeSink{})
	})
	tc := startCluster(t, 3, func(c *Config) { c.Collectors = []prometheus.Collector{rt} })
	li := tc.leaderIndex(t)
	leader := tc.node(li)
	tc.mountHolder(t, "seg-a", "")

	leaderWrites, _ := histogram(t, leader, "sexton_raft_log_write_seconds", "role", "leader")
	followerWrites, _ := histogram(t, leader, "sexton_raft_log_write_seconds", "role", "follower")
	toCommit, _ := histogram(t, leader, "sexton_raft_dispatch_to_commit_seconds")
	var rpcs []uint64
	for i := range 3 {
		if i != li {
			n, _ := histogram(t, leader, "sexton_raft_append_entries_seconds", "peer", tc.node(i).cfg.ID)
			rpcs = append(rpcs, n)
		}
	}

	const keys = 10 // PutStart, PutEnd and Remove: 30 entries
	for i := range keys {
		key := fmt.Sprintf("k%d", i)
		tc.put(t, key, 10, 1)
		if err := tc.remove(key); err != nil {
			t.Fatalf("remove %s: %v", key, err)
		}
	}
	const entries = 3 * keys

	lw, lsum := histogram(t, leader, "sexton_raft_log_write_seconds", "role", "leader")
	if lw-leaderWrites < entries || lsum <= 0 {
		t.Errorf("leader log writes: %d more samples (sum %gs) after %d entries, want at least %d", lw-leaderWrites, lsum, entries, entries)
	}
	// A follower may write several entries in one AppendEntries, but the
	// write that made an entry commit ended with it: one call at a time
	// here, so no later entry existed yet. That is one distinct follower
	// write per entry, whichever follower it was.
	fw, _ := histogram(t, leader, "sexton_raft_log_write_seconds", "role", "follower")
	if fw-followerWrites < entries {
		t.Errorf("follower log writes: %d more samples after %d entries, want at least %d", fw-followerWrites, entries, entries)
	}
	tcm, _ := histogram(t, leader, "sexton_raft_dispatch_to_commit_seconds")
	if tcm-toCommit < entries {
		t.Errorf("dispatch to commit: %d more samples after %d entries, want at least %d", tcm-toCommit, entries, entries)
	}
	j := 0
	for i := range 3 {
		if i == li {
			continue
		}
		id := tc.node(i).cfg.ID
		if n, _ := histogram(t, leader, "sexton_raft_append_entries_seconds", "peer", id); n <= rpcs[j] {
			t.Errorf("AppendEntries to %s: no new sample after %d entries", id, entries)
		}
		j++
	}
}

// Collectors that cannot be served beside the node's own (here, a second
// set of the same timings) make New fail with an error, before it opens
// anything, instead of panicking.
func TestNewRefusesCollectorsThatCollide(t *testing.T) {
	cfg := Config{ID: "m1", DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0", RPCAddr: "127.0.0.1:0", Bootstrap: true,
		Collectors: []prometheus.Collector{raftio.NewRaftTimings(), raftio.NewRaftTimings()}}
	n, err := New(cfg)
	if err == nil {
		n.Shutdown()
		t.Fatal("New served two collectors of the same metrics")
	}
	if !strings.Contains(err.Error(), "config collectors") {
		t.Errorf("error %q does not name the collectors", err)
	}
}
