package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"sexton/api"
	"sexton/dfsio"
	"sexton/internal/cliflag"
	"sexton/internal/heapfloor"
	"sexton/internal/secret"
	"sexton/master"
	"sexton/raftio"
)

// masterOptions are a master's flags: its Config, and what the process
// sets for itself around it.
type masterOptions struct {
	master.Config
	// HeapFloor is the least the Go heap grows between two collections
	// (internal/heapfloor); 0 leaves the collector to GOGC alone.
	HeapFloor uint64
	// SecurityWarning is logged at every start (serverTLS.resolve).
	SecurityWarning string
}

// maxHeapFloor bounds --gc-heap-floor: a floor is headroom over the live
// heap, and past this it is a typo, not a setting.
const maxHeapFloor = 1 << 40

func masterFlags(name string) (*masterOptions, func([]string) error) {
	opts := &masterOptions{}
	cfg := &opts.Config
	fs := newFlags(name)
	fs.StringVar(&cfg.ID, "id", cliflag.EnvString("SEXTON_NODE_ID", "m1"), "node id (env SEXTON_NODE_ID)")
	fs.StringVar(&cfg.DataDir, "data-dir", cliflag.EnvString("SEXTON_DATA_DIR", "sexton-data"), "data directory (env SEXTON_DATA_DIR)")
	fs.StringVar(&cfg.RaftAddr, "raft-addr", cliflag.EnvString("SEXTON_RAFT_ADDR", "127.0.0.1:7001"), "Raft bind/advertise address (env SEXTON_RAFT_ADDR)")
	fs.StringVar(&cfg.RPCAddr, "rpc-addr", cliflag.EnvString("SEXTON_RPC_ADDR", "127.0.0.1:7101"), "RPC address (env SEXTON_RPC_ADDR)")
	fs.StringVar(&cfg.RPCAdvertise, "rpc-advertise", cliflag.EnvString("SEXTON_RPC_ADVERTISE", ""), "RPC address given to clients as the leader's (default: the bound --rpc-addr; env SEXTON_RPC_ADVERTISE)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cliflag.EnvString("SEXTON_HTTP_ADDR", "127.0.0.1:7201"), "HTTP address for /metrics, /healthz, /readyz, /v1/status; empty disables (env SEXTON_HTTP_ADDR)")
	peers := fs.String("peers", cliflag.EnvString("SEXTON_PEERS", ""), "initial voters ID=RAFT_ADDR,... (env SEXTON_PEERS)")
	boot := fs.Bool("bootstrap", cliflag.EnvBool("SEXTON_BOOTSTRAP", false), "bootstrap a new cluster from --peers if this node has no state; safe on every node (env SEXTON_BOOTSTRAP)")
	fs.StringVar(&cfg.ClusterToken, "cluster-token", cliflag.EnvString("SEXTON_CLUSTER_TOKEN", ""), "the masters' shared secret: Raft connections prove it, and on the RPC port it proves the operator role; without role tokens every RPC caller must prove it; at least 32 bytes, sexton operator token generate makes one; a comma-separated list is accepted whole and its first is proved on Raft dials, so a token rolls without downtime (env SEXTON_CLUSTER_TOKEN)")
	roleTokenFlag(fs, &cfg.ClientToken, "client", "RPC port")
	roleTokenFlag(fs, &cfg.HolderToken, "holder", "RPC port")
	roleTokenFlag(fs, &cfg.OperatorToken, "operator", "RPC port")
	fs.StringVar(&cfg.LogStore, "raft-log-store", cliflag.EnvString("SEXTON_RAFT_LOG_STORE", ""), "raft log store: boltdb or wal; unset, the kind the data dir holds (raft.db: boltdb, raft-wal/: wal) and wal for a new data dir. One that contradicts the data dir is refused: sexton operator raft migrate-log-store moves a stopped node's log (env SEXTON_RAFT_LOG_STORE)")
	walSegment := fs.String("raft-wal-segment-size", cliflag.EnvString("SEXTON_RAFT_WAL_SEGMENT_SIZE", "64MiB"), "size of each raft-wal segment file, preallocated whole: the data dir needs room for two (on raft-wal; env SEXTON_RAFT_WAL_SEGMENT_SIZE)")
	fs.DurationVar(&cfg.HeartbeatTimeout, "raft-heartbeat-timeout", cliflag.EnvDuration("SEXTON_RAFT_HEARTBEAT_TIMEOUT", 0), cliflag.EnvUsage("SEXTON_RAFT_HEARTBEAT_TIMEOUT", "raft heartbeat timeout (default 500ms)"))
	fs.DurationVar(&cfg.ElectionTimeout, "raft-election-timeout", cliflag.EnvDuration("SEXTON_RAFT_ELECTION_TIMEOUT", 0), cliflag.EnvUsage("SEXTON_RAFT_ELECTION_TIMEOUT", "raft election timeout (default 500ms)"))
	fs.DurationVar(&cfg.LeaderLeaseTimeout, "raft-leader-lease-timeout", cliflag.EnvDuration("SEXTON_RAFT_LEADER_LEASE_TIMEOUT", 0), cliflag.EnvUsage("SEXTON_RAFT_LEADER_LEASE_TIMEOUT", "raft leader lease timeout (default 250ms)"))
	snapThreshold := fs.Int("raft-snapshot-threshold", cliflag.EnvInt("SEXTON_RAFT_SNAPSHOT_THRESHOLD", 0), cliflag.EnvUsage("SEXTON_RAFT_SNAPSHOT_THRESHOLD", "log entries between snapshots, a backstop to --raft-snapshot-log-bytes; raised to one per 2 KiB of the last snapshot (default 65536)"))
	fs.DurationVar(&cfg.SnapshotInterval, "raft-snapshot-interval", cliflag.EnvDuration("SEXTON_RAFT_SNAPSHOT_INTERVAL", 0), cliflag.EnvUsage("SEXTON_RAFT_SNAPSHOT_INTERVAL", "how often raft checks --raft-snapshot-threshold (default 30s)"))
	snapLogBytes := fs.String("raft-snapshot-log-bytes", cliflag.EnvString("SEXTON_RAFT_SNAPSHOT_LOG_BYTES", "64MiB"), cliflag.EnvUsage("SEXTON_RAFT_SNAPSHOT_LOG_BYTES", "snapshot once the log applied since the last snapshot reaches this size or a quarter of the last snapshot's size, whichever is larger"))
	snapRate := fs.String("raft-snapshot-write-rate", cliflag.EnvString("SEXTON_RAFT_SNAPSHOT_WRITE_RATE", "200MiB"), cliflag.EnvUsage("SEXTON_RAFT_SNAPSHOT_WRITE_RATE", "bytes a second at most that a snapshot this master takes is written at, so that it does not take the disk and a core from the log's appends (0: as fast as it goes; one sent by the leader is never held back)"))
	trailing := fs.Int("raft-trailing-logs", cliflag.EnvInt("SEXTON_RAFT_TRAILING_LOGS", 0), cliflag.EnvUsage("SEXTON_RAFT_TRAILING_LOGS", "log entries kept after a snapshot, at most (default 10240)"))
	trailingBytes := fs.String("raft-trailing-log-bytes", cliflag.EnvString("SEXTON_RAFT_TRAILING_LOG_BYTES", "64MiB"), cliflag.EnvUsage("SEXTON_RAFT_TRAILING_LOG_BYTES", "about how much log is kept after a snapshot: --raft-trailing-logs is lowered to that many entries of the sizes being applied"))
	readSettings := settingFlags(fs, func(sp api.SettingSpec) string {
		return fmt.Sprintf("%s; proposed when a new cluster has no settings yet (default %s); afterwards the replicated value wins: operator settings set", sp.Help, sp.Format(sp.Default))
	}, true)
	fs.IntVar(&cfg.LegacyRegistryCapacity, "legacy-registry-capacity", cliflag.EnvInt("SEXTON_LEGACY_REGISTRY_CAPACITY", 0), "upgrading a cluster from a build before replicated settings: the --registry-capacity that build ran with, the same on every master; its 1.0.0/1.1.0 snapshot and log restore and replay under it until the first Settings entry, which keeps it unless --registry-capacity is given; then no longer consulted (default 50000; env SEXTON_LEGACY_REGISTRY_CAPACITY)")
	fs.DurationVar(&cfg.DiscardTimeout, "put-discard-timeout", cliflag.EnvDuration("SEXTON_PUT_DISCARD_TIMEOUT", 0), cliflag.EnvUsage("SEXTON_PUT_DISCARD_TIMEOUT", "revoke PutStarts that never end after this long (default 10m)"))
	fs.DurationVar(&cfg.GrantTTL, "grant-ttl", cliflag.EnvDuration("SEXTON_GRANT_TTL", 0), cliflag.EnvUsage("SEXTON_GRANT_TTL", "how long a write grant in a PutStart answer is valid (default: --put-discard-timeout, at most 10m)"))
	fs.DurationVar(&cfg.CommitGrantTTL, "commit-grant-ttl", cliflag.EnvDuration("SEXTON_COMMIT_GRANT_TTL", 0), cliflag.EnvUsage("SEXTON_COMMIT_GRANT_TTL", "how long a write grant in a PutGrant answer (one-commit put) is valid; its incarnation block lives twice that (default: 5s, at most --grant-ttl)"))
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", cliflag.EnvDuration("SEXTON_LEASE_TTL", 0), cliflag.EnvUsage("SEXTON_LEASE_TTL", "read lease granted by a Get (default 10s)"))
	fs.DurationVar(&cfg.HolderTTL, "holder-ttl", cliflag.EnvDuration("SEXTON_HOLDER_TTL", 0), cliflag.EnvUsage("SEXTON_HOLDER_TTL", "a holder without heartbeat this long is not placed on (default 10s)"))
	logLevel := fs.String("log-level", cliflag.EnvString("SEXTON_LOG_LEVEL", "info"), "log level (env SEXTON_LOG_LEVEL)")
	stls := addServerTLS(fs)
	fs.BoolVar(&cfg.EnableDebug, "enable-debug", cliflag.EnvBool("SEXTON_ENABLE_DEBUG", false), "serve /debug/pprof/ on the HTTP listener (env SEXTON_ENABLE_DEBUG)")
	heapFloor := fs.String("gc-heap-floor", cliflag.EnvString("SEXTON_GC_HEAP_FLOOR", "0"), "the least the Go heap grows between two collections: while the live heap is small the collector waits for this much garbage instead of GOGC percent of the heap, trading up to this much memory for CPU; a heap larger than the floor collects as GOGC says; GOMEMLIMIT still holds; 0 turns it off (env SEXTON_GC_HEAP_FLOOR)")
	return opts, func(args []string) error {
		if err := parseFlags(fs, args); err != nil {
			return usagef("%v", err)
		}
		if fs.NArg() > 0 {
			return usagef("unexpected argument %q", fs.Arg(0))
		}
		p, err := master.ParsePeers(*peers)
		if err != nil {
			return fmt.Errorf("--peers: %w", err)
		}
		cfg.Peers, cfg.Bootstrap = p, *boot
		cfg.Settings = readSettings()
		// With neither --peers nor --bootstrap given, a node starts as a
		// one-node cluster. --bootstrap=false keeps a node empty so that
		// add-voter can bring it into an existing cluster.
		explicit := false
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "bootstrap" || f.Name == "peers" {
				explicit = true
			}
		})
		if !explicit && os.Getenv("SEXTON_BOOTSTRAP") == "" && len(p) == 0 {
			cfg.Bootstrap = true
		}
		dfs, err := dfsio.SettingsFromEnv(os.Getenv)
		if err != nil {
			return fmt.Errorf("DFS settings: %w", err)
		}
		cfg.DFS = dfs
		cfg.SnapshotThreshold = uint64(max(*snapThreshold, 0))
		cfg.TrailingLogs = uint64(max(*trailing, 0))
		logBytes, err := cliflag.ParseSize(*snapLogBytes)
		if err != nil || logBytes <= 0 {
			return fmt.Errorf("--raft-snapshot-log-bytes %q: want a positive size such as 64MiB", *snapLogBytes)
		}
		cfg.SnapshotLogBytes = uint64(logBytes)
		seg, err := cliflag.ParseSize(*walSegment)
		if err != nil || seg < raftio.MinWALSegmentSize || seg > raftio.MaxWALSegmentSize {
			return usagef("--raft-wal-segment-size %q: want a size from 64KiB to 1GiB", *walSegment)
		}
		cfg.WALSegmentSize = int(seg)
		rate, err := cliflag.ParseSize(*snapRate)
		if err != nil || rate < 0 {
			return fmt.Errorf("--raft-snapshot-write-rate %q: want a size a second such as 256MiB, or 0", *snapRate)
		}
		cfg.SnapshotWriteRate = uint64(rate)
		tb, err := cliflag.ParseSize(*trailingBytes)
		if err != nil || tb <= 0 {
			return fmt.Errorf("--raft-trailing-log-bytes %q: want a positive size such as 64MiB", *trailingBytes)
		}
		cfg.TrailingLogBytes = uint64(tb)
		floor, err := cliflag.ParseSize(*heapFloor)
		if err != nil || floor > maxHeapFloor {
			return usagef("--gc-heap-floor %q: want a size up to 1TiB such as 256MiB, or 0", *heapFloor)
		}
		opts.HeapFloor = uint64(floor)
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "master." + cfg.ID, Level: hclog.LevelFromString(*logLevel), Output: os.Stderr})
		logBuild(cfg.Logger, "master")
		cfg.TLS, cfg.TLSRequireClientCert, opts.SecurityWarning, err = stls.resolve("master RPC port",
			secret.FlagToken{Flag: "--cluster-token", Token: cfg.ClusterToken}, secret.FlagToken{Flag: "--client-token", Token: cfg.ClientToken},
			secret.FlagToken{Flag: "--holder-token", Token: cfg.HolderToken}, secret.FlagToken{Flag: "--operator-token", Token: cfg.OperatorToken})
		return err
	}
}

func runMaster(args []string) error {
	opts, parse := masterFlags("master")
	if err := parse(args); err != nil {
		return err
	}
	cfg := &opts.Config
	// One master in this process: raft's timings are its own.
	cfg.Collectors = append(cfg.Collectors, raftio.InstallRaftTimings())
	if opts.SecurityWarning != "" {
		cfg.Logger.Warn(opts.SecurityWarning)
	}
	floor := heapfloor.Start(opts.HeapFloor)
	defer floor.Stop()
	n, err := master.New(*cfg)
	if err != nil {
		return fmt.Errorf("master %s: %w", cfg.ID, err)
	}
	fmt.Fprintf(os.Stderr, "sexton master %s: raft %s, rpc %s, http %s, data %s\n", cfg.ID, cfg.RaftAddr, n.RPCAddr(), n.HTTPAddr(), cfg.DataDir)
	sd := notifyMaster(n)
	serveSignals(n.ReloadTLS)
	sd.Stop()
	n.Shutdown()
	return nil
}

func waitForSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
	signal.Stop(ch)
}
