package holder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"sexton/api"
	"sexton/internal/authz"
	"sexton/internal/opshttp"
	"sexton/internal/secret"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

// ServiceConfig configures a holder process around an open Store.
type ServiceConfig struct {
	Masters      []string // master RPC addresses
	ClusterToken string
	// ClientToken and OperatorToken (--client-token, --operator-token) are
	// role tokens of the data listener: a caller proving one is a client
	// or an operator there (docs/SECURITY.md, "Roles"). ClusterToken, the
	// token this holder proves to the masters, proves the operator role
	// on it. Each is a comma-separated list (secret.Tokens): the holder
	// proves the first of ClusterToken and its data listener accepts every
	// token listed.
	ClientToken   string
	OperatorToken string
	ListenAddr    string // data RPC listen address
	Advertise     string // data RPC address given to the master; default: the listener's
	ClientID      string
	Pool          string
	Capacity      int64 // bytes this segment may hold (--capacity); 0 = unknown. Reported clamped to the filesystem (Store.EffectiveCapacity)

	// HTTPAddr is where /metrics, /healthz and /readyz are served; empty
	// serves nothing (the registry exists either way: MetricsRegistry).
	HTTPAddr string

	HeartbeatInterval time.Duration // default 1s
	FetchWait         time.Duration // long-poll wait, default 10s
	ReconcileEvery    time.Duration // periodic reconcile, default 5m
	Logger            hclog.Logger

	// TLS, when set, is used for the data RPC listener and for the
	// connections to the masters (presenting this holder's certificate).
	TLS *tlsconf.Source
	// TLSRequireClientCert makes the data RPC listener refuse a client
	// without a certificate of the CA (--tls-client-auth=require).
	TLSRequireClientCert bool
}

func (c *ServiceConfig) setDefaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = time.Second
	}
	if c.FetchWait <= 0 {
		c.FetchWait = 10 * time.Second
	}
	if c.ReconcileEvery <= 0 {
		c.ReconcileEvery = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Pool == "" {
		c.Pool = "default"
	}
}

// Service is a running holder: the data RPC server and the loop that
// follows the master. The store keeps serving reads whether or not a
// leader is reachable.
type Service struct {
	cfg   ServiceConfig
	store *Store
	log   hclog.Logger
	cl    *transport.ClusterClient
	link  transport.HolderLink // the holder protocol over cl
	srv   *transport.Server
	ln    net.Listener

	// process is drawn once per Service: every mount names it, so a new
	// holder process (or a second one on a copy of the directory) always
	// gets a new mount epoch and fences the one before it.
	process string

	mu          sync.Mutex
	mounted     bool
	replayed    bool // the current mount's first reconcile is done (readiness)
	mountEpoch  uint64
	masterEpoch uint64
	clusterID   uint64
	// grantKey checks write grants; set by each mount, cleared when the
	// mount goes stale, so no write is accepted while not mounted.
	grantKey []byte

	// records caches the sorted record list of a rebuild's scan.
	records recordsCache

	remount chan struct{} // the master said our mount is stale
	replay  chan struct{} // the master epoch changed
	stop    chan struct{}
	wg      sync.WaitGroup

	tasksDone    atomic.Int64
	tasksRetried atomic.Int64
	tasksStale   atomic.Int64
	reconciled   atomic.Int64
	// ghostsDropped counts replicas the master dropped from its table on
	// this holder's report that they are tombstoned here (checkGhosts).
	ghostsDropped atomic.Int64
	gcStatus      func() api.GCStatus

	metrics *serviceMetrics
	reg     *prometheus.Registry
	httpSrv *opshttp.Server

	// followTurn is when the follow loop last made progress (unix nanos):
	// the holder's liveness for a watchdog (Alive).
	followTurn atomic.Int64

	// granted are the records stored under grants, asked about once the
	// grants expired (reclaim.go).
	granted grantedWrites
}

// StartService starts the data RPC server and the master-follow loop.
func StartService(store *Store, cfg ServiceConfig) (*Service, error) {
	cfg.setDefaults()
	if len(cfg.Masters) == 0 {
		return nil, fmt.Errorf("holder: no master addresses")
	}
	for _, t := range []struct{ flag, token string }{
		{"--cluster-token", cfg.ClusterToken}, {"--client-token", cfg.ClientToken}, {"--operator-token", cfg.OperatorToken},
	} {
		if _, err := secret.Tokens(t.flag, t.token); err != nil {
			return nil, err
		}
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "holder-" + string(store.SegmentID())
	}
	if _, err := authz.RoleTokens(cfg.ClusterToken, cfg.ClientToken, "", cfg.OperatorToken); err != nil {
		return nil, fmt.Errorf("holder: %w", err)
	}
	s := &Service{cfg: cfg, store: store, log: cfg.Logger, process: uuid.NewString(),
		remount: make(chan struct{}, 1), replay: make(chan struct{}, 1), stop: make(chan struct{}), metrics: newServiceMetrics()}
	store.SetCapacity(cfg.Capacity)
	s.logCapacity()
	s.reg = newRegistry(s)
	s.cl = transport.NewClusterClient(cfg.Masters, transport.ClusterConfig{
		ClientConfig: transport.ClientConfig{Token: secret.First(cfg.ClusterToken), TLS: clientTLS(cfg.TLS)},
		MaxWait:      cfg.FetchWait + 10*time.Second,
	})
	s.link = s.cl.HolderLink()
	if err := s.startDataServer(); err != nil {
		s.cl.Close()
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		if err := s.startHTTP(cfg.HTTPAddr); err != nil {
			_ = s.srv.Close()
			s.cl.Close()
			return nil, fmt.Errorf("holder: http %s: %w", cfg.HTTPAddr, err)
		}
	}
	s.followTurn.Store(time.Now().UnixNano())
	s.wg.Add(2)
	go s.followLoop()
	go s.heartbeatLoop()
	return s, nil
}

// Addr is the data RPC address.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// SetGCStatus lets the GC worker report through the status RPC.
// It may be called while the status RPC is being served.
func (s *Service) SetGCStatus(f func() api.GCStatus) {
	s.mu.Lock()
	s.gcStatus = f
	s.mu.Unlock()
}

// Close stops the loops and the server. It does not close the store.
func (s *Service) Close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	if s.httpSrv != nil {
		_ = s.httpSrv.Close()
	}
	_ = s.srv.Close()
	s.cl.Close()
	s.wg.Wait()
}

func (s *Service) advertise() string {
	if s.cfg.Advertise != "" {
		return s.cfg.Advertise
	}
	return s.ln.Addr().String()
}

func (s *Service) mountState() (bool, uint64, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mounted, s.mountEpoch, s.masterEpoch
}

// replayDone reports whether the current mount's replay has finished.
func (s *Service) replayDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mounted && s.replayed
}

func (s *Service) stopped() bool { return isClosed(s.stop) }

func (s *Service) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}

func (s *Service) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// mount registers the segment with the leader and records the epoch the
// master will accept from now on.
func (s *Service) mount() error {
	ctx, cancel := s.ctx(20 * time.Second)
	defer cancel()
	// The marker's cluster lets a rebuilt cluster tell a late holder of
	// the lost cluster (refused until adopted) from a new one.
	marker := s.store.Identity().ClusterID
	resp, err := s.link.Mount(ctx, &api.MountLocalDiskRequest{
		ClientID: s.cfg.ClientID, Segment: s.store.SegmentID(), Pool: s.cfg.Pool, Capacity: s.store.EffectiveCapacity(),
		Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: s.advertise(), Process: s.process,
		MarkerCluster: &marker,
	})
	if err != nil {
		return err
	}
	// The directory remembers its cluster: a holder pointed at another
	// cluster's masters must not take its tasks or its reconciliation.
	if resp.ClusterID != 0 {
		if err := s.store.BindCluster(resp.ClusterID); err != nil {
			return fmt.Errorf("refusing to follow cluster %016x: %w", resp.ClusterID, err)
		}
	}
	if len(resp.GrantKey) != api.GrantKeyLen {
		s.log.Error("the master sent no usable grant key; every write will be refused", "grant_key_bytes", len(resp.GrantKey))
	}
	s.mu.Lock()
	s.mounted, s.mountEpoch, s.masterEpoch, s.clusterID = true, resp.MountEpoch, resp.MasterEpoch, resp.ClusterID
	s.replayed = false
	s.grantKey = resp.GrantKey
	s.mu.Unlock()
	s.log.Info("mounted", "segment", s.store.SegmentID(), "mount_epoch", resp.MountEpoch, "master_epoch", resp.MasterEpoch, "repeat", resp.AlreadyMounted)
	return nil
}

func (s *Service) markUnmounted(why error) {
	s.mu.Lock()
	was := s.mounted
	s.mounted = false
	s.replayed = false
	s.grantKey = nil
	s.mu.Unlock()
	if was {
		s.log.Warn("mount is stale; stopping deletes until remounted", "error", why)
	}
}

// followLoop: mount, replay (fetch everything pending and reconcile), then
// long-poll fetch → tombstone → ack, for as long as the mount is current.
// A stale mount epoch stops all acting until the holder has remounted; a
// master epoch change triggers a replay.
func (s *Service) followLoop() {
	defer s.wg.Done()
	lastReconcile := time.Time{}
	// ghostCheck: a ghost check (checkGhosts) is due after the next
	// reconcile; set by every mount and master epoch change. A failed one
	// is tried again from ghostRetry on, between fetches.
	ghostCheck := false
	var ghostRetry time.Time
	adoptWait := time.Duration(0)
	for !s.stopped() {
		s.followTurn.Store(time.Now().UnixNano())
		if mounted, _, _ := s.mountState(); !mounted {
			if err := s.mount(); err != nil {
				if api.CodeOf(err) == api.CodeSegmentNeedsAdoption {
					// A rebuilt cluster that has not adopted this holder:
					// nothing is bound, reconciled or tombstoned until
					// the operator adopts or retires it; ask again, more
					// slowly the longer it takes.
					adoptWait = min(max(2*adoptWait, time.Second), maxAdoptionWait)
					s.log.Error("the rebuilt cluster refuses this holder until an operator adopts it (operator rebuild) or retires it; changing nothing and asking again",
						"segment", s.store.SegmentID(), "retry_in", adoptWait, "error", err)
					s.sleep(adoptWait)
					continue
				}
				s.log.Warn("mount failed; retrying", "error", err)
				s.sleep(500 * time.Millisecond)
				continue
			}
			adoptWait = 0
			lastReconcile = time.Time{}
			ghostCheck = true
		}
		select {
		case <-s.replay:
			lastReconcile = time.Time{}
			ghostCheck = true
		case <-s.remount:
			s.markUnmounted(errors.New("heartbeat asked for a remount"))
			continue
		default:
		}
		if time.Since(lastReconcile) > s.cfg.ReconcileEvery {
			if err := s.reconcile(); err != nil {
				if s.handleStale(err) {
					continue
				}
				s.log.Warn("reconcile failed; retrying", "error", err)
				s.sleep(500 * time.Millisecond)
				continue
			}
			lastReconcile = time.Now()
			s.mu.Lock()
			s.replayed = s.mounted
			s.mu.Unlock()
		}
		if ghostCheck && !time.Now().Before(ghostRetry) {
			unsupported, err := s.checkGhosts()
			switch {
			case err == nil:
				ghostCheck = false
			case unsupported:
				// An older master: no evidence is asked for, so nothing
				// is dropped; deletes go on as before.
				s.log.Info("the master has no ghost check; copies it lists that are tombstoned here stay listed", "error", err)
				ghostCheck = false
			case s.handleStale(err):
				continue
			default:
				// Retried between fetches: a check that keeps failing
				// must not stop deletes.
				s.log.Warn("ghost check failed; retrying in a second, between fetches", "error", err)
				ghostRetry = time.Now().Add(time.Second)
			}
		}
		if err := s.reclaimGranted(); err != nil {
			if s.handleStale(err) {
				continue
			}
			s.log.Debug("asking about records of expired grants failed; asking again later", "error", err)
		}
		if err := s.fetchOnce(); err != nil {
			if s.handleStale(err) {
				continue
			}
			if !s.stopped() {
				s.log.Debug("fetch failed; retrying", "error", err)
				s.sleep(200 * time.Millisecond)
			}
		}
	}
}

// maxAdoptionWait bounds the wait between the mounts of a holder a
// rebuilt cluster refuses until it is adopted.
const maxAdoptionWait = 10 * time.Second

// handleStale reacts to answers that say our mount is no longer current.
func (s *Service) handleStale(err error) bool {
	switch api.CodeOf(err) {
	case api.CodeStaleMountEpoch, api.CodeSegmentNotFound, api.CodeCapabilityRequired:
		s.markUnmounted(err)
		return true
	}
	return false
}

// noteMasterEpoch triggers a replay when the master epoch moves.
func (s *Service) noteMasterEpoch(e uint64) {
	s.mu.Lock()
	changed := e != 0 && e != s.masterEpoch
	if changed {
		s.masterEpoch = e
	}
	s.mu.Unlock()
	if changed {
		s.log.Info("master epoch changed; replaying", "master_epoch", e)
		signal(s.replay)
	}
}

// fetchOnce long-polls for tasks, tombstones them durably, and acks the
// terminal outcomes. RetryableFailure outcomes are not acked: the task
// stays pending and comes back on a later fetch.
func (s *Service) fetchOnce() error {
	mounted, epoch, _ := s.mountState()
	if !mounted {
		return nil
	}
	ctx, cancel := s.ctx(s.cfg.FetchWait + 5*time.Second)
	defer cancel()
	fr, err := s.link.Fetch(ctx, &api.FetchTasksRequest{
		Segment: s.store.SegmentID(), MountEpoch: epoch, Limit: api.MaxFetchLimit, WaitMillis: s.cfg.FetchWait.Milliseconds(),
	})
	if err != nil {
		s.metrics.fetches.WithLabelValues("error").Inc()
		return err
	}
	s.noteMasterEpoch(fr.MasterEpoch)
	if len(fr.Tasks) == 0 {
		s.metrics.fetches.WithLabelValues("empty").Inc()
		return nil
	}
	s.metrics.fetches.WithLabelValues("tasks").Inc()
	s.metrics.tasksFetched.Add(float64(len(fr.Tasks)))
	results := s.store.BatchMarkDeleted(fr.Tasks)
	terminal := results[:0:0]
	var failures []api.TaskFailure
	for _, r := range results {
		s.metrics.outcomes.WithLabelValues(r.Outcome.String()).Inc()
		if r.Outcome.Terminal() {
			terminal = append(terminal, r)
			if r.Outcome == api.AckStaleVersion {
				s.tasksStale.Add(1)
			}
		} else {
			s.tasksRetried.Add(1)
			failures = append(failures, api.TaskFailure{TaskID: r.TaskID, Error: r.Detail})
		}
	}
	if len(terminal) > 0 || len(failures) > 0 {
		// Failures ride along so the master can say why a task is stuck;
		// they drop nothing.
		if len(terminal) > 0 {
			followBeforeAck.Hit()
			s.waitAckGate()
		}
		if _, err := s.link.Ack(ctx, &api.AckTasksRequest{Segment: s.store.SegmentID(), MountEpoch: epoch, Results: terminal, Failures: failures}); err != nil {
			s.metrics.acks.WithLabelValues("error").Inc()
			return err
		}
		s.metrics.acks.WithLabelValues("ok").Inc()
		s.tasksDone.Add(int64(len(terminal)))
	}
	if len(terminal) < len(results) {
		// Persisting failed for some buckets: do not spin on them.
		s.sleep(time.Second)
	}
	return nil
}

// reconcile reports the live set in pages; the leader answers which refs
// are not live on this segment (after a barrier), and those are
// tombstoned. Already-tombstoned records are not reported at all.
func (s *Service) reconcile() error {
	_, epoch, _ := s.mountState()
	refs := s.store.LiveRefs()
	for start := 0; start < len(refs); start += api.MaxReconcilePage {
		s.followTurn.Store(time.Now().UnixNano()) // a long reconcile is progress
		page := refs[start:min(start+api.MaxReconcilePage, len(refs))]
		ctx, cancel := s.ctx(20 * time.Second)
		rr, err := s.link.Reconcile(ctx, &api.ReconcileRequest{Segment: s.store.SegmentID(), MountEpoch: epoch, Objects: page})
		cancel()
		if err != nil {
			return err
		}
		// A ref the master could not decide yet (its put's block is live,
		// or a read lease holds it) is asked about again soon, as a write
		// under an expired grant is, rather than at the next periodic
		// reconcile: after a restart the holder no longer remembers its
		// granted writes, and this is how their bytes come back.
		now := time.Now()
		for _, r := range rr.Undecided {
			s.granted.note(r, now)
		}
		if len(rr.NotLive) == 0 {
			continue
		}
		tasks := make([]api.LocalDeleteTask, len(rr.NotLive))
		for i, r := range rr.NotLive {
			tasks[i] = api.LocalDeleteTask{Segment: s.store.SegmentID(), Key: r.Key, Incarnation: r.Incarnation}
		}
		for _, res := range s.store.BatchMarkDeleted(tasks) {
			if res.Outcome == api.AckRemoved {
				s.reconciled.Add(1)
			}
		}
		s.log.Info("reconcile tombstoned records the master does not know as live", "count", len(rr.NotLive))
	}
	return nil
}

func (s *Service) heartbeatLoop() {
	defer s.wg.Done()
	for s.sleep(s.cfg.HeartbeatInterval) {
		mounted, epoch, _ := s.mountState()
		if !mounted {
			continue
		}
		u := s.store.Usage()
		ctx, cancel := s.ctx(5 * time.Second)
		hr, err := s.link.Heartbeat(ctx, &api.HeartbeatRequest{ClientID: s.cfg.ClientID, Segment: s.store.SegmentID(),
			MountEpoch: epoch, Used: u.UsedBytes, Capacity: s.store.EffectiveCapacity(), DeadBytes: u.DeadBytes,
			KnownSegments: s.store.KnownSegmentsDigest()})
		cancel()
		if err != nil {
			continue
		}
		if len(hr.Segments) > 0 && !hr.Remount {
			s.noteSegments(hr.ClusterID, hr.Segments)
		}
		if hr.Remount {
			signal(s.remount)
		}
		s.noteMasterEpoch(hr.MasterEpoch)
	}
}

// noteSegments records the cluster's segment ids the master sent, for a
// rebuild after the masters are lost. Only while mounted and only from
// the cluster the holder mounted (a heartbeat can reach the masters of
// another cluster that reuse the addresses, after the old ones were
// lost); a failed write is tried again on the next heartbeat (the
// digests still differ).
func (s *Service) noteSegments(from uint64, ids []api.SegmentID) {
	s.mu.Lock()
	mounted, cluster := s.mounted, s.clusterID
	s.mu.Unlock()
	if !mounted || cluster == 0 || from != cluster {
		return
	}
	if err := s.store.SetKnownSegments(cluster, ids); err != nil {
		s.log.Warn("could not record the cluster's segments", "count", len(ids), "error", err)
	}
}

// logCapacity says once, at start, when --capacity promises more than the
// filesystem has: the holder reports the clamped value instead.
func (s *Service) logCapacity() {
	st := s.store.SpaceStats()
	switch {
	case s.cfg.Capacity <= 0:
	case st.StatfsError != "":
		s.log.Warn("cannot statfs the store directory; reporting --capacity unclamped", "capacity_bytes", s.cfg.Capacity, "err", st.StatfsError)
	case s.cfg.Capacity > st.FSTotalBytes:
		s.log.Warn("--capacity exceeds the filesystem; reporting what the filesystem can hold instead",
			"capacity_flag_bytes", s.cfg.Capacity, "fs_total_bytes", st.FSTotalBytes, "fs_free_bytes", st.FSFreeBytes,
			"capacity_effective_bytes", st.CapacityEffectiveBytes, "metadata_reserve_bytes", st.MetadataReserveBytes)
	case s.cfg.Capacity > 0 && st.CapacityEffectiveBytes < s.cfg.Capacity:
		s.log.Info("--capacity exceeds the free space of the filesystem; reporting the clamped capacity",
			"capacity_flag_bytes", s.cfg.Capacity, "capacity_effective_bytes", st.CapacityEffectiveBytes, "fs_free_bytes", st.FSFreeBytes)
	}
}
