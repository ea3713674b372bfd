package holder

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"sexton/api"
	"sexton/internal/buildinfo"
)

// Metrics of one holder process, in their own registry (several holders
// in one process, as tests and `sexton dev` run them, must not collide).
// Most values are read from the store's stats at scrape time
// (storeCollector); counters exist only for events no stat records:
// tombstone persistence latency, and the fetch/ack traffic with the master.

// newRegistry builds the holder's registry with every collector.
func newRegistry(svc *Service) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(&storeCollector{svc: svc}, buildinfo.Gauge())
	reg.MustRegister(svc.store.events.tombstonePersist, svc.store.events.putSync)
	reg.MustRegister(svc.metrics.fetches, svc.metrics.tasksFetched, svc.metrics.outcomes, svc.metrics.acks, svc.metrics.audit)
	reg.MustRegister(newSpaceCollector(svc.store)) // holder/metrics_space.go
	return reg
}

// storeEvents counts the store's events that Usage and GCStats do not.
type storeEvents struct {
	tombstoneBatches         atomic.Int64
	tombstonePersistFailures atomic.Int64
	tombstonePersist         prometheus.Histogram
	// putSync times a put group commit's two durable steps, which every
	// put of the group waits for: `sexton bench put` reads it.
	putSync *prometheus.HistogramVec
}

func newStoreEvents() *storeEvents {
	return &storeEvents{tombstonePersist: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sexton_holder_tombstone_persist_seconds",
		Help:    "Time to persist one bucket's tombstones (write .meta.tmp, fsync, rename, fsync the directory), failures included.",
		Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16),
	}), putSync: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sexton_holder_put_sync_seconds",
		Help:    "Time of one put group commit's durable steps: step=data is the fsync of the appended values, step=meta the metadata persist (write .meta.tmp, fsync, rename, fsync the directory); failures included.",
		Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16),
	}, []string{"step"})}
}

// observePutSync records one put group commit step (data or meta).
func (e *storeEvents) observePutSync(step string, d time.Duration) {
	e.putSync.WithLabelValues(step).Observe(d.Seconds())
}

func (e *storeEvents) observeTombstonePersist(d time.Duration, err error) {
	e.tombstonePersist.Observe(d.Seconds())
	if err != nil {
		e.tombstonePersistFailures.Add(1)
	}
}

// serviceMetrics counts the holder's traffic with the master.
type serviceMetrics struct {
	fetches      *prometheus.CounterVec // by result: tasks, empty, error
	tasksFetched prometheus.Counter
	outcomes     *prometheus.CounterVec // by outcome, what tombstoning answered
	acks         *prometheus.CounterVec // by result: ok, error
	audit        *prometheus.CounterVec // audited data calls (internal/authz)
}

func newServiceMetrics() *serviceMetrics {
	m := &serviceMetrics{
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_holder_fetches_total",
			Help: "Fetch long-polls to the master, by result (tasks, empty, error)."}, []string{"result"}),
		tasksFetched: prometheus.NewCounter(prometheus.CounterOpts{Name: "sexton_holder_tasks_fetched_total",
			Help: "Delete tasks received from the master (with repeats)."}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_holder_task_outcomes_total",
			Help: "Fetched delete tasks by the outcome tombstoning gave them; RetryableFailure ones are not acked."}, []string{"outcome"}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_holder_acks_total",
			Help: "Ack calls to the master, by result (ok, error)."}, []string{"result"}),
		audit: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sexton_holder_rpc_audit_total",
			Help: "Audited data RPC calls (every call made as an operator and every refused call) by method, caller role and outcome (ok or the error code)."}, []string{"method", "role", "outcome"}),
	}
	// Every label value exists from the start, so rate() sees the first
	// event and a dashboard shows 0 rather than nothing.
	for _, r := range []string{"tasks", "empty", "error"} {
		m.fetches.WithLabelValues(r)
	}
	for o := api.AckRemoved; o <= api.AckRetryableFailure; o++ {
		m.outcomes.WithLabelValues(o.String())
	}
	for _, r := range []string{"ok", "error"} {
		m.acks.WithLabelValues(r)
	}
	return m
}

// storeCollector reads the store's and the service's state at scrape time.
type storeCollector struct{ svc *Service }

var (
	descLiveBytes    = prometheus.NewDesc("sexton_holder_live_bytes", "Value bytes of live records.", nil, nil)
	descDeadBytes    = prometheus.NewDesc("sexton_holder_dead_bytes", "Value bytes of tombstoned or shadowed records not yet reclaimed by GC.", nil, nil)
	descUsedBytes    = prometheus.NewDesc("sexton_holder_used_bytes", "Bytes of bucket data and metadata files on disk (what the watermarks measure).", nil, nil)
	descCapacity     = prometheus.NewDesc("sexton_holder_capacity_bytes", "Bytes this holder may use (--capacity); 0 = unknown, watermarks off.", nil, nil)
	descUsageRatio   = prometheus.NewDesc("sexton_holder_disk_usage_ratio", "Used bytes over capacity; absent when the capacity is unknown.", nil, nil)
	descWatermark    = prometheus.NewDesc("sexton_holder_gc_watermark_ratio", "GC watermarks: reclaim starts at high and stops at low.", []string{"level"}, nil)
	descBuckets      = prometheus.NewDesc("sexton_holder_buckets", "Buckets in the store.", nil, nil)
	descObjects      = prometheus.NewDesc("sexton_holder_objects", "Records by state (live, tombstoned).", []string{"state"}, nil)
	descTombBatches  = prometheus.NewDesc("sexton_holder_tombstone_batches_total", "Tombstone batches (fetched tasks or reconcile findings) run.", nil, nil)
	descTombFailures = prometheus.NewDesc("sexton_holder_tombstone_persist_failures_total", "Bucket tombstone persistences that failed (their tasks stay pending).", nil, nil)
	descGCEnabled    = prometheus.NewDesc("sexton_holder_gc_enabled", "1 when the bucket GC worker runs.", nil, nil)
	descGCPasses     = prometheus.NewDesc("sexton_holder_gc_passes_total", "GC wakes that looked for work.", nil, nil)
	descGCPunched    = prometheus.NewDesc("sexton_holder_gc_bytes_punched_total", "Tombstoned record bytes punched out of their buckets in place because no merge that would reclaim them fit the free space.", nil, nil)
	descGCRefused    = prometheus.NewDesc("sexton_holder_gc_refused_put_passes_total", "GC passes that reclaimed dead bytes of any ratio because puts had been refused for lack of space.", nil, nil)
	descGCRounds     = prometheus.NewDesc("sexton_holder_gc_rounds_total", "GC rounds by result (committed, aborted).", []string{"result"}, nil)
	descGCCopied     = prometheus.NewDesc("sexton_holder_gc_bytes_copied_total", "Live value bytes GC copied into merge targets.", nil, nil)
	descGCReclaimed  = prometheus.NewDesc("sexton_holder_gc_bytes_reclaimed_total", "Bytes GC freed: source files removed minus targets written.", nil, nil)
	descGCBuckets    = prometheus.NewDesc("sexton_holder_gc_buckets_total", "Buckets GC handled, by action (unlinked, merged, evicted).", []string{"action"}, nil)
	descGCEvicted    = prometheus.NewDesc("sexton_holder_gc_objects_evicted_total", "Live records tombstoned because the master agreed to evict them.", nil, nil)
	descGCCleanup    = prometheus.NewDesc("sexton_holder_gc_cleanup_pending", "1 while a committed round's source unlink waits for a retry.", nil, nil)
	descGCLastError  = prometheus.NewDesc("sexton_holder_gc_last_error_timestamp_seconds", "When GC last failed (Unix time); absent if never.", nil, nil)
	descGCRecovered  = prometheus.NewDesc("sexton_holder_gc_intent_recoveries_total",
		"Pending GC rounds this process resolved at open, by the state the intent was in (PREPARED, COMMITTED).", []string{"state"}, nil)
	descMounted    = prometheus.NewDesc("sexton_holder_mounted", "1 while the holder holds a current mount of its segment.", nil, nil)
	descMountEpoch = prometheus.NewDesc("sexton_holder_mount_epoch", "The mount epoch of the last successful mount.", nil, nil)
	descReplayed   = prometheus.NewDesc("sexton_holder_replayed", "1 once the current mount's replay (fetch everything pending, reconcile) is done: /readyz.", nil, nil)
	descReconciled = prometheus.NewDesc("sexton_holder_reconciled_records_total", "Records reconcile tombstoned because the master did not know them as live.", nil, nil)
	descGhosts     = prometheus.NewDesc("sexton_holder_ghost_replicas_dropped_total", "Replicas the master dropped from its table because this holder holds them tombstoned (the ghost check after a restore).", nil, nil)
)

var storeDescs = []*prometheus.Desc{descLiveBytes, descDeadBytes, descUsedBytes, descCapacity, descUsageRatio, descWatermark,
	descBuckets, descObjects, descTombBatches, descTombFailures, descGCEnabled, descGCPasses, descGCRefused, descGCPunched, descGCRounds, descGCCopied,
	descGCReclaimed, descGCBuckets, descGCEvicted, descGCCleanup, descGCLastError, descGCRecovered,
	descMounted, descMountEpoch, descReplayed, descReconciled, descGhosts}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range storeDescs {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.svc.store
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	u := s.Usage()
	g := s.GCStats()
	gauge(descLiveBytes, float64(u.LiveBytes))
	gauge(descDeadBytes, float64(u.DeadBytes))
	gauge(descUsedBytes, float64(u.UsedBytes))
	gauge(descBuckets, float64(u.Buckets))
	gauge(descObjects, float64(u.LiveObjects), "live")
	gauge(descObjects, float64(u.TombstonedObjects), "tombstoned")
	// The GC's capacity is what the watermarks act on; the mount's is the
	// fallback when GC was never started.
	capacity := g.Capacity
	if capacity <= 0 {
		capacity = c.svc.cfg.Capacity
	}
	gauge(descCapacity, float64(max(capacity, 0)))
	if capacity > 0 {
		gauge(descUsageRatio, float64(u.UsedBytes)/float64(capacity))
	}
	if g.HighWatermark > 0 {
		gauge(descWatermark, g.HighWatermark, "high")
		gauge(descWatermark, g.LowWatermark, "low")
	}
	counter(descTombBatches, float64(s.events.tombstoneBatches.Load()))
	counter(descTombFailures, float64(s.events.tombstonePersistFailures.Load()))
	gauge(descGCEnabled, boolGauge(g.Enabled))
	counter(descGCPasses, float64(g.Passes))
	counter(descGCRefused, float64(g.PutsRefusedPasses))
	counter(descGCPunched, float64(g.BytesPunched))
	counter(descGCRounds, float64(g.Rounds), "committed")
	counter(descGCRounds, float64(g.Aborted), "aborted")
	counter(descGCCopied, float64(g.BytesCopied))
	counter(descGCReclaimed, float64(g.BytesReclaimed))
	counter(descGCBuckets, float64(g.BucketsUnlinked), "unlinked")
	counter(descGCBuckets, float64(g.BucketsMerged), "merged")
	counter(descGCBuckets, float64(g.BucketsEvicted), "evicted")
	counter(descGCEvicted, float64(g.ObjectsEvicted))
	gauge(descGCCleanup, boolGauge(g.CleanupPending))
	if !g.LastErrorAt.IsZero() {
		gauge(descGCLastError, float64(g.LastErrorAt.UnixNano())/1e9)
	}
	rep := s.OpenReport()
	for _, st := range []string{gcPrepared.String(), gcCommitted.String()} {
		counter(descGCRecovered, boolGauge(rep.GCRecoveredState == st), st)
	}
	mounted, epoch, _ := c.svc.mountState()
	gauge(descMounted, boolGauge(mounted))
	gauge(descMountEpoch, float64(epoch))
	gauge(descReplayed, boolGauge(c.svc.replayDone()))
	counter(descReconciled, float64(c.svc.reconciled.Load()))
	counter(descGhosts, float64(c.svc.ghostsDropped.Load()))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
