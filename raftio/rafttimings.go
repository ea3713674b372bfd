package raftio

import (
	"slices"
	"sync"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// RaftTimings is a go-metrics sink that keeps the few timings hashicorp/raft
// reports which take a commit apart, as Prometheus histograms:
//
//	sexton_raft_log_write_seconds{role="leader"}    the leader writing new entries to its own log
//	sexton_raft_log_write_seconds{role="follower"}  a follower writing entries an AppendEntries brought
//	sexton_raft_append_entries_seconds{peer}        an AppendEntries to one follower and back (its log write included)
//	sexton_raft_dispatch_to_commit_seconds          the leader's log write started to the entry committed
//	sexton_raft_compact_logs_seconds                a log compaction after a snapshot (on boltdb a write transaction: appends wait for it)
//
// With sexton_raft_commit_seconds (a proposal to its applied result) they
// say where a slow commit went: the leader's disk, a follower's disk, or
// the network and scheduling between them (docs/SCALING.md, "The 16 × 1
// commit cycle", takes 16 × 1 apart with them). Every other key raft reports is
// dropped.
//
// hashicorp/raft reports through go-metrics' one process-wide sink, with
// nothing that names the node, so the timings of every node in a process
// land here together: install it (InstallRaftTimings) only in a process
// that runs one master, as `sexton master` and `sexton dev` do; tests with
// several nodes leave it out. The sink is installed through go-metrics'
// compat package, the one hashicorp/raft v1.7 reports through: it forwards
// to armon/go-metrics unless built with the hashicorpmetrics tag, and a
// sink installed in hashicorp/go-metrics itself would receive nothing.
type RaftTimings struct {
	logWrite      *prometheus.HistogramVec
	appendEntries *prometheus.HistogramVec
	toCommit      prometheus.Histogram
	compact       prometheus.Histogram
}

// raftTimingBuckets run from 50 µs to ~1.6 s: a log write on a fast SSD
// is ~0.1 ms, a commit across three masters ~1 ms.
var raftTimingBuckets = prometheus.ExponentialBuckets(50e-6, 2, 16)

// NewRaftTimings makes an empty set of timings, not installed anywhere.
func NewRaftTimings() *RaftTimings {
	h := func(name, help string) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Name: name, Help: help, Buckets: raftTimingBuckets}
	}
	return &RaftTimings{
		logWrite:      prometheus.NewHistogramVec(h("sexton_raft_log_write_seconds", "Time to write new entries to this node's Raft log (one StoreLogs), by role: the leader's own write before it replicates them, or a follower's on an AppendEntries."), []string{"role"}),
		appendEntries: prometheus.NewHistogramVec(h("sexton_raft_append_entries_seconds", "Round trip of an AppendEntries carrying entries from the leader to one follower, the follower's log write included, by follower."), []string{"peer"}),
		toCommit:      prometheus.NewHistogram(h("sexton_raft_dispatch_to_commit_seconds", "On the leader, time from starting the write of an entry to its own log to the entry committing (a quorum has it).")),
		compact:       prometheus.NewHistogram(h("sexton_raft_compact_logs_seconds", "Time to remove the log entries a snapshot made redundant.")),
	}
}

var (
	installOnce      sync.Once
	installedTimings *RaftTimings
)

// InstallRaftTimings makes the process's RaftTimings go-metrics' global
// sink, once, and returns it; later calls return the same one. Serve it by
// putting it in Config.Collectors.
func InstallRaftTimings() *RaftTimings {
	installOnce.Do(func() {
		installedTimings = NewRaftTimings()
		installedTimings.Install()
	})
	return installedTimings
}

// Install makes t go-metrics' global sink. No service prefix, hostname or
// runtime sampler: keys arrive as raft names them, and go-metrics starts
// no goroutine of its own.
func (t *RaftTimings) Install() {
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableHostnameLabel = false
	cfg.EnableRuntimeMetrics = false
	cfg.EnableTypePrefix = false
	cfg.FilterDefault = true
	_, _ = gometrics.NewGlobal(cfg, t) // the error is only the runtime sampler's, which is off
}

// Raft's keys for the timings kept.
var (
	keyLeaderLogWrite   = []string{"raft", "leader", "dispatchLog"}
	keyFollowerLogWrite = []string{"raft", "rpc", "appendEntries", "storeLogs"}
	keyAppendEntries    = []string{"raft", "replication", "appendEntries", "rpc"}
	keyToCommit         = []string{"raft", "commitTime"}
	keyCompactLogs      = []string{"raft", "compactLogs"}
)

// AddSampleWithLabels keeps the samples of the keys above; go-metrics
// times in milliseconds.
func (t *RaftTimings) AddSampleWithLabels(key []string, ms float32, labels []gometrics.Label) {
	s := float64(ms) / 1e3
	switch {
	case slices.Equal(key, keyLeaderLogWrite):
		t.logWrite.WithLabelValues("leader").Observe(s)
	case slices.Equal(key, keyFollowerLogWrite):
		t.logWrite.WithLabelValues("follower").Observe(s)
	case slices.Equal(key, keyAppendEntries):
		for _, l := range labels {
			if l.Name == "peer_id" {
				t.appendEntries.WithLabelValues(l.Value).Observe(s)
			}
		}
	case slices.Equal(key, keyToCommit):
		t.toCommit.Observe(s)
	case slices.Equal(key, keyCompactLogs):
		t.compact.Observe(s)
	}
}

// AddSample is AddSampleWithLabels without labels.
func (t *RaftTimings) AddSample(key []string, ms float32) { t.AddSampleWithLabels(key, ms, nil) }

// The rest of go-metrics' MetricSink: raft's gauges and counters are not kept.
func (*RaftTimings) SetGauge([]string, float32)                                 {}
func (*RaftTimings) SetGaugeWithLabels([]string, float32, []gometrics.Label)    {}
func (*RaftTimings) EmitKey([]string, float32)                                  {}
func (*RaftTimings) IncrCounter([]string, float32)                              {}
func (*RaftTimings) IncrCounterWithLabels([]string, float32, []gometrics.Label) {}

// Describe and Collect make RaftTimings a prometheus.Collector.
func (t *RaftTimings) Describe(ch chan<- *prometheus.Desc) {
	t.logWrite.Describe(ch)
	t.appendEntries.Describe(ch)
	t.toCommit.Describe(ch)
	t.compact.Describe(ch)
}

// Collect: see Describe.
func (t *RaftTimings) Collect(ch chan<- prometheus.Metric) {
	t.logWrite.Collect(ch)
	t.appendEntries.Collect(ch)
	t.toCommit.Collect(ch)
	t.compact.Collect(ch)
}
