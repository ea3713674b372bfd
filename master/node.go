package master

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/fsm"
	"sexton/internal/opshttp"
	"sexton/internal/secret"
	"sexton/internal/tlsconf"
	"sexton/raftio"
	"sexton/transport"
)

// Node is one running master.
type Node struct {
	cfg Config
	log hclog.Logger

	fsm     *fsm.FSM
	rfsm    *raftFSM
	raft    *raft.Raft
	guard   *raftio.StoreGuard // between raft and its log store (raftio/storeguard.go)
	wake    *wakeups           // long polls waiting for entries that concern them
	closers []func() error

	// logStoreReopens counts the log store's reopens (LogStore.Reopens;
	// nil for boltdb): sexton_raft_log_store_reopens_total.
	logStoreReopens func() int64

	segCache segmentCache // the segment list placement reads (rpc_objects.go)
	incs     incAllocator // this term's incarnation blocks (putcommit.go)

	// sizedAtBytes and sizedAtEntries are the meter's applied counts at
	// the last followLogSize that measured the entry size; only the
	// snapshot-trigger goroutine touches them.
	sizedAtBytes, sizedAtEntries uint64

	rpc       *transport.Server
	rpcLn     net.Listener
	httpSrv   *opshttp.Server
	metrics   *metrics
	soft      *softState
	refused   refusedMounts // late holders' refused mounts (rpc_rebuild.go)
	segSet    segmentSetCache
	dfs       *dfsNode // nil when MOONCAKE_DFS_ROOT_DIR is unset
	removes   *removeBatcher
	transfers snapshotTransfers
	leaderMu  sync.Mutex
	// readyTerm is the term in which this node, as leader, applied
	// everything committed before that term (barrier) and committed its
	// EpochBegin; 0 when none. It counts only while that term is current
	// and this node still leads it (isReady).
	readyTerm    atomic.Uint64
	leaderCancel context.CancelFunc
	leaderTerm   uint64 // the term leaderCancel's duties run for
	leaderWG     sync.WaitGroup
	// halted is set just before Halt is called: the entry at which this
	// node stopped applying is one no build here understands. With the
	// default Halt the process exits at once; an embedding that keeps the
	// process up still shows it in sexton_master_halted.
	halted atomic.Bool

	// liveProbe is RaftResponsive's VerifyLeader still unanswered, if
	// any: a stuck loop gets one waiting probe, not one per keep-alive.
	liveProbe atomic.Pointer[chan struct{}]

	stopOnce sync.Once
	stopped  chan struct{}
	wg       sync.WaitGroup
}

// New opens the node's data directory and starts Raft, the RPC server and
// the HTTP server. It returns once the node is serving; leadership comes
// later.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Halt == nil {
		logger := cfg.Logger
		cfg.Halt = func(err error) {
			logger.Error("master halted", "error", err)
			fmt.Fprintf(os.Stderr, "sexton master: halted: %v\n", err)
			os.Exit(3)
		}
	}
	// Settings come from the log (bootstrapSettings); until then a state
	// written by an older build applies under that build's capacity.
	n := &Node{
		cfg:     cfg,
		log:     cfg.Logger,
		fsm:     fsm.New(fsm.Config{Legacy: cfg.legacySettings()}),
		wake:    newWakeups(),
		stopped: make(chan struct{}),
	}
	n.metrics = newMetrics(n)
	for _, c := range cfg.Collectors {
		if err := n.metrics.reg.Register(c); err != nil {
			return nil, fmt.Errorf("config collectors: %w", err)
		}
	}
	n.soft = newSoftState()
	dfs, err := newDFSNode(cfg.DFS)
	if err != nil {
		return nil, fmt.Errorf("dfs: %w", err)
	}
	n.dfs = dfs
	halt := cfg.Halt
	n.rfsm = &raftFSM{f: n.fsm, log: cfg.Logger.Named("fsm"), halt: func(err error) { n.halted.Store(true); halt(err) }, wake: n.wake, obs: n.metrics.observeApply, snapObs: n.metrics.observeSnapshotPause, snapRate: int64(min(cfg.SnapshotWriteRate, 1<<62)), stopping: n.stopped, applied: &appliedHooks{}}
	if err := n.startRaft(); err != nil {
		n.closeAll()
		return nil, err
	}
	n.removes = newRemoveBatcher(n.proposeApplied, n.metrics, cfg.MaxRemoveBatch)
	if err := n.startRPC(); err != nil {
		n.Shutdown()
		return nil, err
	}
	if cfg.HTTPAddr != "" {
		if err := n.startHTTP(); err != nil {
			n.Shutdown()
			return nil, err
		}
	}
	n.wg.Add(3)
	go n.watchLeadership()
	go n.warnSettingsFlags()
	go n.snapshotByBytes()
	return n, nil
}

func (n *Node) startRaft() error {
	cfg := n.cfg
	// Owner only: the Raft log and the snapshots in it hold the grant key
	// (docs/SECURITY.md, "What snapshots contain").
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	rc := RaftConfig(cfg)
	store, err := raftio.OpenLogStore(cfg.DataDir, raftio.LogStoreOptions{Kind: cfg.LogStore, WALSegmentSize: cfg.WALSegmentSize}, n.log.Named("wal"))
	if err != nil {
		return err
	}
	n.closers = append(n.closers, store.Close)
	n.logStoreReopens = store.Reopens
	if cfg.LogStore == "" && store.Kind == raftio.LogStoreBoltDB {
		n.log.Info("data dir has " + raftio.BoltDBFileName + ": keeping the boltdb log store; `" + raftio.MigrateLogStoreCommand + "` moves it")
	} else {
		n.log.Info("raft log store", "kind", store.Kind, "flag", cfg.LogStore)
	}
	logs, stable := store.Logs, store.Stable
	snaps, err := raftio.OpenSnapshotStore(cfg.DataDir, n.log.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("snapshot store: %w", err)
	}
	if cfg.TLS != nil {
		// The other masters refuse a Raft certificate that does not name
		// this master: say so at start rather than as refusals later.
		ids, err := cfg.TLS.MasterIDs()
		if err != nil {
			return err
		}
		if !slices.Contains(ids, cfg.ID) {
			return fmt.Errorf("--tls-cert %s does not name this master: it needs the URI subject alternative name %s (it names masters %q); reissue it, or the other masters refuse its Raft connections", cfg.TLS.Files().Cert, tlsconf.MasterURI(cfg.ID), ids)
		}
	}
	peers := raftio.NewRaftPeers(cfg.ID)
	auth := raftio.RaftAuth{
		Token: secret.First(cfg.ClusterToken), Accept: secret.Split(cfg.ClusterToken), TLS: cfg.TLS, Peers: peers,
		Refused: func(side, reason string) { n.metrics.raftRefused.WithLabelValues(side, reason).Inc() },
	}
	if auth.Open() && cfg.Dev {
		n.log.Info("development cluster: the Raft port has neither cluster token nor TLS", "raft_addr", cfg.RaftAddr)
	} else if auth.Open() {
		n.log.Warn(raftio.OpenRaftWarning+": with neither a cluster token nor TLS, whoever reaches it can vote, append entries and install snapshots (set --cluster-token or --tls-cert/--tls-key/--tls-ca)", "raft_addr", cfg.RaftAddr)
	}
	trans, err := raftio.NewRaftTransportWithAuth(cfg.RaftAddr, auth, n.log.Named("raft-net"))
	if err != nil {
		return err
	}
	n.closers = append(n.closers, trans.Close)

	if cfg.Bootstrap {
		has, err := raft.HasExistingState(logs, stable, snaps)
		if err != nil {
			return fmt.Errorf("inspect raft state: %w", err)
		}
		if !has {
			peers := cfg.Peers
			if len(peers) == 0 {
				peers = []Peer{{ID: cfg.ID, RaftAddr: cfg.RaftAddr}}
			}
			var conf raft.Configuration
			for _, p := range peers {
				conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
			}
			// Every node bootstrapping with the same configuration is safe:
			// they all start from the same index-1 configuration entry.
			if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, conf); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				return fmt.Errorf("bootstrap: %w", err)
			}
		}
	}
	if h := cfg.hooks.wrapStore; h != nil {
		logs, stable = h(logs, stable)
	}
	// Bootstrap above wrote through the bare store, so a bootstrap on a
	// full disk fails New with the error; from here on the guard keeps a
	// failed write from making raft panic or campaign.
	n.guard = raftio.NewStoreGuard(logs, stable, cfg.DataDir, n.log.Named("logstore"), n.metrics.noteStoreFailure)
	if cfg.hooks.probe != nil {
		n.guard.SetProbe(cfg.hooks.probe)
	}
	r, err := raft.NewRaft(rc, n.rfsm, raftio.CachedLogs(n.guard), n.guard, snaps, raftio.NewPreVoteGate(trans, n.guard))
	if err != nil {
		n.guard.Close()
		if refused := n.rfsm.legacyRefusal(); refused != nil {
			// hashicorp/raft says only that no snapshot loaded.
			return fmt.Errorf("start raft: %w", refused)
		}
		return fmt.Errorf("start raft: %w", err)
	}
	n.rfsm.started.Store(true)
	peers.Follow(func() (raft.Configuration, error) {
		f := r.GetConfiguration()
		return f.Configuration(), f.Error()
	})
	n.guard.Attach(r)
	n.raft = r
	return nil
}

// Raft exposes the underlying Raft for tests and the bench subcommand.
func (n *Node) Raft() *raft.Raft { return n.raft }

// FSM exposes the state machine (read-only use).
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// RPCAddr is the address the RPC server listens on.
func (n *Node) RPCAddr() string { return n.rpcLn.Addr().String() }

// HTTPAddr is the address the HTTP server listens on, or "".
func (n *Node) HTTPAddr() string {
	if n.httpSrv == nil {
		return ""
	}
	return n.httpSrv.Addr()
}

// IsLeader reports whether this node is the ready leader.
func (n *Node) IsLeader() bool { return n.isReady() }

// Done is closed when the node has shut down.
func (n *Node) Done() <-chan struct{} { return n.stopped }

// Shutdown stops the node. A leader first hands leadership to another voter
// so clients see a short election-free handover rather than a timeout.
func (n *Node) Shutdown() {
	n.stopOnce.Do(func() {
		if n.raft != nil && n.raft.State() == raft.Leader && n.voterCount() > 1 {
			if err := n.raft.LeadershipTransfer().Error(); err != nil {
				n.log.Warn("leadership transfer before exit failed", "error", err)
			}
		}
		close(n.stopped)
		if n.rpc != nil {
			_ = n.rpc.Close()
		}
		if n.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = n.httpSrv.Shutdown(ctx)
			cancel()
		}
		n.stopLeaderDuties()
		if n.removes != nil {
			n.removes.close()
		}
		if n.guard != nil {
			// Releases a term write parked in the guard, which raft's
			// shutdown would otherwise wait for.
			n.guard.Close()
		}
		if n.raft != nil {
			if err := n.raft.Shutdown().Error(); err != nil {
				n.log.Warn("raft shutdown", "error", err)
			}
		}
		n.wg.Wait()
		n.closeAll()
	})
}

func (n *Node) closeAll() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		_ = n.closers[i]()
	}
	n.closers = nil
}

func (n *Node) voterCount() int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	c := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}
