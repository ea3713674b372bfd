package master

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"sexton/api"
	"sexton/fsm"
	"sexton/internal/buildinfo"
	"sexton/raftio"
)

// metrics are per node, in their own registry, so several nodes in one
// process (tests, `sexton dev`) do not collide.
type metrics struct {
	reg             *prometheus.Registry
	tlsReloads      *prometheus.CounterVec
	applyLatency    prometheus.Histogram
	snapshotPause   prometheus.Histogram
	commitLatency   prometheus.Histogram
	rpcLatency      *prometheus.HistogramVec
	rpcErrors       *prometheus.CounterVec
	removeBatchKeys prometheus.Histogram
	fetchedTasks    prometheus.Counter
	ackedTasks      prometheus.Counter
	deleteLag       prometheus.Histogram
	leaderChanges   prometheus.Counter
	duplicates      *prometheus.CounterVec
	raftRefused     *prometheus.CounterVec
	storeFailures   *prometheus.CounterVec
	audit           *prometheus.CounterVec
}

func newMetrics(n *Node) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	// 50 ms is a bucket bound of both: no Apply may pause longer while a
	// snapshot is taken (docs/SCALING.md "Targets"), and these say whether one did.
	applyBuckets := append(prometheus.ExponentialBuckets(1e-6, 4, 12), 0.05)
	slices.Sort(applyBuckets)
	m.applyLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sexton_fsm_apply_seconds", Help: "Time to apply one Raft entry to the fsm.", Buckets: applyBuckets})
	m.snapshotPause = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sexton_fsm_snapshot_pause_seconds", Help: "Time FSM.Snapshot holds the fsm goroutine, when no entry can be applied; the snapshot is written afterwards, beside Apply.", Buckets: []float64{1e-5, 1e-4, 1e-3, 0.01, 0.05, 0.25, 1}})
	m.commitLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sexton_raft_commit_seconds", Help: "Time from proposal to applied result on the leader.", Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16)})
	m.rpcLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sexton_rpc_seconds", Help: "RPC handling time by method.", Buckets: prometheus.ExponentialBuckets(1e-5, 4, 12)}, []string{"method"})
	m.rpcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_rpc_errors_total", Help: "RPC errors by method and code."}, []string{"method", "code"})
	m.removeBatchKeys = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sexton_remove_batch_keys", Help: "Keys per coalesced Remove entry.", Buckets: prometheus.ExponentialBuckets(1, 2, 13)})
	m.fetchedTasks = prometheus.NewCounter(prometheus.CounterOpts{Name: "sexton_tasks_fetched_total", Help: "Delete tasks handed to holders (with repeats)."})
	m.ackedTasks = prometheus.NewCounter(prometheus.CounterOpts{Name: "sexton_tasks_acked_total", Help: "Delete tasks dropped by committed acks."})
	m.deleteLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sexton_delete_lag_seconds", Help: "Time from the entry that created a delete task (Remove, overwrite, revoke) to the committed ack that dropped it, observed on the leader.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 12)})
	m.leaderChanges = prometheus.NewCounter(prometheus.CounterOpts{Name: "sexton_leader_terms_total", Help: "Times this node became the ready leader."})
	m.duplicates = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_session_duplicates_total", Help: "Repeated client requests answered from the session table, by command."}, []string{"command"})
	m.raftRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_raft_conn_refused_total", Help: "Raft connections closed because they failed authentication (mutual TLS or the cluster token), by side (accept: a dialer was refused; dial: a peer we dialed was) and reason."}, []string{"side", "reason"})
	m.tlsReloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_tls_reloads_total", Help: "TLS certificate reloads (SIGHUP) by result: ok, error (the previous material stays)."}, []string{"result"})
	m.storeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_raft_log_store_write_failures_total", Help: "Failed writes to the Raft log or stable store, by operation (store_logs, set_term, set_stable, delete_range) and reason (enospc, edquot, other)."}, []string{"op", "reason"})
	m.audit = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_rpc_audit_total", Help: "Audited RPC calls (every call made as an operator and every refused call) by method, caller role and outcome (ok or the error code)."}, []string{"method", "role", "outcome"})
	m.reg.MustRegister(m.audit)
	m.reg.MustRegister(m.applyLatency, m.snapshotPause, m.commitLatency, m.rpcLatency, m.rpcErrors, m.removeBatchKeys, m.fetchedTasks, m.ackedTasks, m.deleteLag, m.leaderChanges, m.duplicates, m.raftRefused, m.tlsReloads, m.storeFailures)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(&stateCollector{n: n}, buildinfo.Gauge())
	return m
}

func (m *metrics) observeApply(d time.Duration)         { m.applyLatency.Observe(d.Seconds()) }
func (m *metrics) observeSnapshotPause(d time.Duration) { m.snapshotPause.Observe(d.Seconds()) }
func (m *metrics) observeCommit(d time.Duration)        { m.commitLatency.Observe(d.Seconds()) }

// observeDeleteLag records, for tasks an ack dropped, the time since the
// entry that created each (the leader's clock then; a task without a
// creation time, restored or rebuilt, is left out).
func (m *metrics) observeDeleteLag(created []int64, now time.Time) {
	for _, c := range created {
		if c > 0 {
			m.deleteLag.Observe(max(now.Sub(time.Unix(0, c)).Seconds(), 0))
		}
	}
}

// noteStoreFailure counts a failed log or stable store write.
func (m *metrics) noteStoreFailure(op, reason string) {
	m.storeFailures.WithLabelValues(op, reason).Inc()
}

// noteDuplicate counts a request of command type t that the session table
// answered (a client's repeat).
func (m *metrics) noteDuplicate(t fsm.CommandType, dup bool) {
	if dup {
		m.duplicates.WithLabelValues(t.String()).Inc()
	}
}

// countAudit counts one audited RPC call (internal/authz).
func (m *metrics) countAudit(method, role, outcome string) {
	m.audit.WithLabelValues(method, role, outcome).Inc()
}

func (m *metrics) observeRPC(method string, d time.Duration, err error) {
	m.rpcLatency.WithLabelValues(method).Observe(d.Seconds())
	if err != nil {
		m.rpcErrors.WithLabelValues(method, string(api.CodeOf(err))).Inc()
	}
}

// stateCollector reads gauges from the fsm and Raft at scrape time.
type stateCollector struct{ n *Node }

var (
	descRaftState   = prometheus.NewDesc("sexton_raft_state", "1 for this node's current Raft state.", []string{"state"}, nil)
	descRaftIndex   = prometheus.NewDesc("sexton_raft_index", "Raft commit and applied index.", []string{"kind"}, nil)
	descObjects     = prometheus.NewDesc("sexton_objects", "Objects with a COMPLETE incarnation.", nil, nil)
	descTasks       = prometheus.NewDesc("sexton_pending_tasks", "Pending local-delete tasks by segment.", []string{"segment"}, nil)
	descRegistryOcc = prometheus.NewDesc("sexton_registry_occupancy_ratio", "Pending tasks over registry capacity.", nil, nil)
	descEpoch       = prometheus.NewDesc("sexton_master_epoch", "The replicated master epoch.", nil, nil)
	descSettings    = prometheus.NewDesc("sexton_settings", "The replicated settings in force, by name.", []string{"name"}, nil)
	descSessions    = prometheus.NewDesc("sexton_sessions", "The client session table: clients kept, results kept, approximate bytes.", []string{"kind"}, nil)

	// What the alerts in deploy/monitoring need.
	descLeaderKnown = prometheus.NewDesc("sexton_raft_leader_known", "1 when this node knows a Raft leader (itself or another).", nil, nil)
	descIsLeader    = prometheus.NewDesc("sexton_raft_is_leader", "1 when this node is the ready leader (barrier and EpochBegin of its term done).", nil, nil)
	descTerm        = prometheus.NewDesc("sexton_raft_term", "This node's current Raft term; it moves on every election.", nil, nil)
	descHalted      = prometheus.NewDesc("sexton_master_halted", "1 when this node refused a log entry and halted (it applies nothing more).", nil, nil)
	descOldestTask  = prometheus.NewDesc("sexton_delete_task_oldest_age_seconds",
		"Age of the segment's oldest pending local-delete task: now minus the leader time recorded when the task's entry was committed.", []string{"segment"}, nil)
	descHeartbeatAge = prometheus.NewDesc("sexton_holder_heartbeat_age_seconds",
		"Leader only: seconds since the holder of a mounted segment last heartbeated (a holder mounted when this term began counts from then).", []string{"segment"}, nil)
	descCannotWrite = prometheus.NewDesc("sexton_raft_log_store_cannot_write", "1 while this node's Raft log store cannot write (a write failed and no probe write or log append has succeeded since); the node does not campaign meanwhile.", nil, nil)
	descReopens     = prometheus.NewDesc("sexton_raft_log_store_reopens_total", "Times this node's Raft log store was opened anew while running: raft-wal, after an append met a segment left sealed by a failed write or rotation (a full disk).", nil, nil)
	descDirFree     = prometheus.NewDesc("sexton_data_dir_free_bytes", "Bytes free for an unprivileged writer in the file system of the data dir (statfs).", nil, nil)
	descDirSize     = prometheus.NewDesc("sexton_data_dir_size_bytes", "Size of the file system of the data dir (statfs).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRaftState, descRaftIndex, descObjects, descTasks, descRegistryOcc, descEpoch, descSettings, descSessions,
		descLeaderKnown, descIsLeader, descTerm, descHalted, descOldestTask, descHeartbeatAge, descCannotWrite, descReopens, descDirFree, descDirSize} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	if n.raft != nil {
		ch <- prometheus.MustNewConstMetric(descRaftState, prometheus.GaugeValue, 1, n.raft.State().String())
		ch <- prometheus.MustNewConstMetric(descRaftIndex, prometheus.GaugeValue, float64(n.raft.CommitIndex()), "commit")
		ch <- prometheus.MustNewConstMetric(descRaftIndex, prometheus.GaugeValue, float64(n.raft.AppliedIndex()), "applied")
		ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(n.raft.CurrentTerm()))
		_, leaderID := n.raft.LeaderWithID()
		ch <- prometheus.MustNewConstMetric(descLeaderKnown, prometheus.GaugeValue, boolGauge(leaderID != ""))
		ch <- prometheus.MustNewConstMetric(descIsLeader, prometheus.GaugeValue, boolGauge(n.isReady()))
	}
	ch <- prometheus.MustNewConstMetric(descHalted, prometheus.GaugeValue, boolGauge(n.halted.Load()))
	if n.guard != nil {
		cannot, _, _ := n.guard.State()
		v := 0.0
		if cannot {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descCannotWrite, prometheus.GaugeValue, v)
	}
	if n.logStoreReopens != nil {
		ch <- prometheus.MustNewConstMetric(descReopens, prometheus.CounterValue, float64(n.logStoreReopens()))
	}
	if free, size, err := raftio.DirSpace(n.cfg.DataDir); err == nil {
		ch <- prometheus.MustNewConstMetric(descDirFree, prometheus.GaugeValue, float64(free))
		ch <- prometheus.MustNewConstMetric(descDirSize, prometheus.GaugeValue, float64(size))
	}
	c.collectDeletion(ch)
	st := n.fsm.Stats()
	ch <- prometheus.MustNewConstMetric(descObjects, prometheus.GaugeValue, float64(st.Objects))
	ch <- prometheus.MustNewConstMetric(descEpoch, prometheus.GaugeValue, float64(st.MasterEpoch))
	for seg, c := range st.TasksBySegment {
		ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, float64(c), string(seg))
	}
	set, _ := n.fsm.Settings()
	if set.RegistryCapacity > 0 {
		ch <- prometheus.MustNewConstMetric(descRegistryOcc, prometheus.GaugeValue, float64(st.PendingTasks)/float64(set.RegistryCapacity))
	}
	for _, sp := range api.SettingsTable {
		v, name := float64(sp.Get(&set)), sp.Name()
		if sp.Unit == api.UnitMillis {
			v, name = v/1000, name+"_seconds"
		}
		ch <- prometheus.MustNewConstMetric(descSettings, prometheus.GaugeValue, v, name)
	}
	ss := n.fsm.SessionStats()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(ss.Clients), "clients")
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(ss.Results), "results")
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(ss.Bytes), "bytes")
}

// collectDeletion exports the ages the stuck-deletion and dead-holder
// alerts watch. It costs one step per segment: the oldest task of a
// segment is the first of its id-ordered queue (ids and the leader's
// clock both only grow, up to clock skew between successive leaders),
// and segments are few.
func (c *stateCollector) collectDeletion(ch chan<- prometheus.Metric) {
	n := c.n
	now := time.Now()
	segs := n.fsm.Segments()
	for _, seg := range segs {
		if seg.PendingTasks == 0 {
			continue
		}
		oldest, _ := n.fsm.ListTasks(seg.ID, 1)
		// A task restored from a snapshot without creation times (or
		// rebuilt) has Created 0: its age is unknown, not 56 years.
		if len(oldest) == 0 || oldest[0].Created <= 0 {
			continue
		}
		age := now.Sub(time.Unix(0, oldest[0].Created)).Seconds()
		ch <- prometheus.MustNewConstMetric(descOldestTask, prometheus.GaugeValue, max(age, 0), string(seg.ID))
	}
	// Liveness is the leader's soft state; a follower's is stale or empty,
	// so followers export nothing rather than a misleading age.
	if n.raft == nil || !n.isReady() {
		return
	}
	ages := n.soft.HeartbeatAges(now)
	for _, seg := range segs {
		if !seg.Mounted || seg.Retired {
			continue
		}
		age, ok := ages[seg.ID]
		if !ok {
			continue // unmounted in between: nothing to wait for
		}
		ch <- prometheus.MustNewConstMetric(descHeartbeatAge, prometheus.GaugeValue, max(age.Seconds(), 0), string(seg.ID))
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// MetricsRegistry is this node's Prometheus registry (what /metrics
// serves), for embedding processes and tests.
func (n *Node) MetricsRegistry() *prometheus.Registry { return n.metrics.reg }
