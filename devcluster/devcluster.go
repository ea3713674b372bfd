package devcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"sexton/api"
	"sexton/dfsio"
	"sexton/holder"
	"sexton/internal/loopback"
	"sexton/master"
	"sexton/raftio"
	"sexton/transport"
)

// Config says where the cluster lives. Empty addresses are free loopback
// ports chosen at start.
type Config struct {
	// Dir holds the master's and the holder's data; it must exist.
	Dir                                     string
	RPCAddr, RaftAddr, HTTPAddr, HolderAddr string
	// HolderHTTPAddr is the holder's /metrics address; empty: a free
	// loopback port.
	HolderHTTPAddr string
	// Logger receives both nodes' logs; nil discards them.
	Logger hclog.Logger
	// DFS settings, for DFS replicas (off when zero).
	DFS dfsio.Settings
}

// Cluster is a running one-process cluster.
type Cluster struct {
	Master *master.Node
	Holder *holder.Service
	Store  *holder.Store
}

// Start starts the master, waits until it leads, then starts the holder
// and waits until it has mounted.
func Start(cfg Config) (*Cluster, error) {
	for _, a := range []*string{&cfg.RPCAddr, &cfg.RaftAddr, &cfg.HTTPAddr, &cfg.HolderAddr, &cfg.HolderHTTPAddr} {
		if *a == "" {
			p, err := loopback.Free()
			if err != nil {
				return nil, err
			}
			*a = p
		}
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	n, err := master.New(master.Config{ID: "dev", DataDir: filepath.Join(cfg.Dir, "master"), RaftAddr: cfg.RaftAddr,
		RPCAddr: cfg.RPCAddr, HTTPAddr: cfg.HTTPAddr, Bootstrap: true, Dev: true, DFS: cfg.DFS, Logger: log.Named("master"),
		// The one master of the process: raft's timings are its own.
		Collectors: []prometheus.Collector{raftio.InstallRaftTimings()}})
	if err != nil {
		return nil, fmt.Errorf("dev master: %w", err)
	}
	c := &Cluster{Master: n}
	if err := waitFor(30*time.Second, n.IsLeader); err != nil {
		c.Close()
		return nil, fmt.Errorf("dev master did not become leader: %w", err)
	}
	if err := c.startHolder(cfg, log); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startHolder(cfg Config, log hclog.Logger) error {
	dir := filepath.Join(cfg.Dir, "holder")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	opts, err := holder.OptionsFromEnv()
	if err != nil {
		return err
	}
	gc, err := holder.GCOptionsFromEnv()
	if err != nil {
		return err
	}
	holderLog := log.Named("holder")
	opts.Logger = holderLog
	store, err := holder.OpenStore(dir, opts)
	if err != nil {
		return fmt.Errorf("dev holder: %w", err)
	}
	c.Store = store
	svc, err := holder.StartService(store, holder.ServiceConfig{Masters: []string{c.Master.RPCAddr()}, ListenAddr: cfg.HolderAddr,
		HTTPAddr: cfg.HolderHTTPAddr, ClientID: "dev-holder", Logger: holderLog})
	if err != nil {
		return fmt.Errorf("dev holder: %w", err)
	}
	c.Holder = svc
	// The service is the evictor: live data goes only after the master agrees.
	if err := store.StartGC(gc, svc); err != nil {
		return fmt.Errorf("dev holder GC: %w", err)
	}
	svc.SetGCStatus(func() api.GCStatus { return store.GCStats().Status() })
	log.Info("dev holder", "segment", store.SegmentID(), "data_rpc", svc.Addr())
	return waitFor(30*time.Second, func() bool { return c.holderMounted() })
}

func (c *Cluster) holderMounted() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, c.Holder.Addr(), transport.ClientConfig{})
	if err != nil {
		return false
	}
	defer conn.Close()
	var st api.HolderStatusResponse
	return conn.Call(ctx, api.MethodHolderStatus, &api.Empty{}, &st) == nil && st.Mounted
}

// MasterAddr is the master's RPC address, what clients are given.
func (c *Cluster) MasterAddr() string { return c.Master.RPCAddr() }

// Close stops the holder, then the master.
func (c *Cluster) Close() {
	if c.Holder != nil {
		c.Holder.Close()
	}
	if c.Store != nil {
		c.Store.Close()
	}
	if c.Master != nil {
		c.Master.Shutdown()
	}
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
