package master

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm"
	"sexton/grant"
	"sexton/internal/authz"
	"sexton/internal/secret"
	"sexton/internal/tlsconf"
	"sexton/master/policy/snaptrigger"
	"sexton/raftio"
)

// Peer is one voter of a new cluster, as given by --peers ID=RAFT_ADDR.
type Peer struct {
	ID       string
	RaftAddr string
}

// ParsePeers parses "id1=host:port,id2=host:port".
func ParsePeers(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Peer
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		id, addr, ok := strings.Cut(part, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want ID=RAFT_ADDR", part)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer id %q given twice", id)
		}
		seen[id] = true
		out = append(out, Peer{ID: id, RaftAddr: addr})
	}
	return out, nil
}

// Config configures one master node. Zero values take the defaults below.
type Config struct {
	ID       string
	DataDir  string
	RaftAddr string // bind and advertise address of the Raft transport
	RPCAddr  string // msgpack RPC for clients, holders and operators
	// RPCAdvertise is the RPC address this node names as the leader's in
	// NOT_LEADER hints when it differs from the bound one (a proxy or NAT
	// in front); empty means the bound address.
	RPCAdvertise string
	HTTPAddr     string // /metrics, /healthz, /readyz, /v1/status; empty = off

	Peers     []Peer
	Bootstrap bool

	// ClusterToken (--cluster-token) is the masters' shared secret, a
	// comma-separated list (secret.Tokens): a master proves the first on
	// the Raft connections it dials and accepts every one there and on
	// its RPC listener, so a token can be rolled without downtime.
	ClusterToken string
	// Dev is the one-process development cluster (sexton dev), which runs
	// on loopback without token or TLS by design: the open Raft port is
	// then an Info line, not a warning.
	Dev bool
	// ClientToken, HolderToken and OperatorToken (--client-token,
	// --holder-token, --operator-token) are the role tokens of the RPC
	// listener: a caller proving one has that role (docs/SECURITY.md,
	// "Roles"). The cluster token proves the operator role there. Each is
	// a comma-separated list, every token of which is accepted.
	ClientToken   string
	HolderToken   string
	OperatorToken string
	LogStore      string // "boltdb", "wal", or "" for what the data dir holds (ChooseLogStore)
	// WALSegmentSize is raft-wal's segment size in bytes (--raft-wal-
	// segment-size); 0: DefaultWALSegmentSize. Only with LogStore "wal".
	WALSegmentSize int

	// TLS is this node's certificate, key and CA (--tls-cert, --tls-key,
	// --tls-ca); nil means TLS is off. With it, Raft connections run over
	// mutual TLS: a peer without a certificate from the CA is refused.
	TLS *tlsconf.Source

	// Raft timing. The defaults suit a LAN: a leader is declared dead after
	// ~500 ms without contact and a new one elected within about a second.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotThreshold  uint64
	SnapshotInterval   time.Duration
	TrailingLogs       uint64
	// TrailingLogBytes is about how much log, in bytes, a node keeps
	// behind its last snapshot: TrailingLogs is lowered to that many
	// entries of the sizes being applied (snapshotter.go, snaptrigger.TrailingCount).
	TrailingLogBytes uint64
	// SnapshotLogBytes is the least log, in bytes applied since the last
	// snapshot, that triggers a new one (snapshotter.go; default 64 MiB).
	SnapshotLogBytes uint64
	// SnapshotWriteRate is the bytes a second at most that Persist writes
	// a snapshot this node takes at (raftio/snappace.go; 0: unpaced).
	SnapshotWriteRate uint64

	// Settings change what Apply does, so they are replicated settings
	// (invariant 12): these values (api.SettingsTable; one flag each) are
	// only proposed by the first leader of a cluster whose state has no
	// settings yet. Afterwards the replicated values win; a value here
	// that disagrees is logged and ignored. A zero field takes the fsm's
	// default.
	Settings api.Settings
	// LegacyRegistryCapacity is the registry capacity the build from
	// before replicated settings ran with (its --registry-capacity), for
	// a state that has no replicated settings yet: the fsm restores a
	// 1.0.0/1.1.0 snapshot and replays the old log under it, and the
	// first leader proposes it as the replicated capacity (unless
	// RegistryCapacity is given). Every master must be given the same.
	// Not consulted once the state has settings, or when the snapshot
	// restored carries its own. Zero: the fsm's default, what the old
	// build ran with without the flag.
	LegacyRegistryCapacity int

	ApplyTimeout   time.Duration
	DiscardTimeout time.Duration // PutStarts older than this are revoked
	// GrantTTL is how long a write grant in a PutStart answer stays valid
	// (default: DiscardTimeout, after which the put is revoked anyway).
	GrantTTL time.Duration
	// CommitGrantTTL is how long a write grant in a PutGrant answer stays
	// valid; the incarnation block it comes from lives twice that
	// (docs/DESIGN.md §8).
	CommitGrantTTL time.Duration
	LeaseTTL       time.Duration // a Get protects an object from eviction this long
	HolderTTL      time.Duration // a holder without heartbeat this long is not live
	MaxRemoveBatch int           // keys coalesced into one Remove entry

	// DFS are this master's MOONCAKE_DFS_* settings (dfsio.SettingsFromEnv);
	// DFS is off when DFS.Root is empty. The allocator part is proposed to
	// the cluster (DFSConfigure) when this node leads.
	DFS dfsio.Settings
	// DFSStrayGrace is how long a file below the DFS root that the state
	// does not know stays before the leader removes it (default 10 × the
	// eviction check interval).
	DFSStrayGrace time.Duration
	// DFSTick is how often the leader looks for DFS file work (default 200ms).
	DFSTick time.Duration

	// TLSRequireClientCert makes the RPC listener (with TLS) refuse a
	// client without a certificate of the CA (--tls-client-auth=require).
	// Off, a client may come without one, but one it presents must chain
	// to the CA. The HTTP listener never requires one: probes and
	// scrapers rarely have one, and nothing there changes state.
	TLSRequireClientCert bool
	// EnableDebug serves /debug/pprof/ on the HTTP listener
	// (--enable-debug). Off by default: profiles expose internals
	// (goroutine stacks, allocation sites), and a CPU profile or trace
	// costs the node CPU for as long as whoever can connect asks.
	EnableDebug bool

	// Collectors are served on /metrics beside the node's own: the
	// process's RaftTimings (InstallRaftTimings) in a process that runs
	// one master.
	Collectors []prometheus.Collector

	Logger hclog.Logger
	// Halt is called when the fsm refuses an entry (unknown version,
	// corrupt body). It must not return; the default logs and exits 3.
	Halt func(err error)

	// hooks are this package's test hooks, nil and inert otherwise
	// (hooks.go).
	hooks testHooks
}

func (c *Config) setDefaults() {
	c.ID = cmp.Or(c.ID, "m1")
	c.DataDir = cmp.Or(c.DataDir, "sexton-data")
	c.RaftAddr = cmp.Or(c.RaftAddr, "127.0.0.1:7001")
	c.RPCAddr = cmp.Or(c.RPCAddr, "127.0.0.1:7101")
	c.HeartbeatTimeout = cmp.Or(c.HeartbeatTimeout, 500*time.Millisecond)
	c.ElectionTimeout = cmp.Or(c.ElectionTimeout, 500*time.Millisecond)
	c.LeaderLeaseTimeout = cmp.Or(c.LeaderLeaseTimeout, 250*time.Millisecond)
	c.CommitTimeout = cmp.Or(c.CommitTimeout, 5*time.Millisecond)
	// A backstop: the byte trigger (SnapshotLogBytes) normally fires first.
	c.SnapshotThreshold = cmp.Or(c.SnapshotThreshold, 65536)
	c.SnapshotInterval = cmp.Or(c.SnapshotInterval, 30*time.Second)
	c.SnapshotLogBytes = cmp.Or(c.SnapshotLogBytes, snaptrigger.DefaultSnapshotLogBytes)
	c.TrailingLogs = cmp.Or(c.TrailingLogs, 10240)
	c.TrailingLogBytes = cmp.Or(c.TrailingLogBytes, snaptrigger.DefaultTrailingLogBytes)
	c.ApplyTimeout = cmp.Or(c.ApplyTimeout, 10*time.Second)
	c.DiscardTimeout = cmp.Or(c.DiscardTimeout, 10*time.Minute)
	c.GrantTTL = cmp.Or(c.GrantTTL, min(c.DiscardTimeout, grant.MaxLifetime))
	c.CommitGrantTTL = cmp.Or(c.CommitGrantTTL, min(5*time.Second, c.GrantTTL))
	c.LeaseTTL = cmp.Or(c.LeaseTTL, 10*time.Second)
	c.HolderTTL = cmp.Or(c.HolderTTL, 10*time.Second)
	c.MaxRemoveBatch = cmp.Or(c.MaxRemoveBatch, 4096)
	if c.DFSStrayGrace == 0 && c.DFS.Enabled() {
		c.DFSStrayGrace = 10 * time.Duration(c.DFS.Alloc.EvictionCheckInterval) * time.Second
	}
	c.DFSTick = cmp.Or(c.DFSTick, 200*time.Millisecond)
	if c.Logger == nil {
		c.Logger = hclog.New(&hclog.LoggerOptions{Name: "sexton-master", Level: hclog.Info})
	}
}

func (c *Config) validate() error {
	for _, t := range []struct{ flag, token string }{
		{"--cluster-token", c.ClusterToken}, {"--client-token", c.ClientToken},
		{"--holder-token", c.HolderToken}, {"--operator-token", c.OperatorToken},
	} {
		if _, err := secret.Tokens(t.flag, t.token); err != nil {
			return err
		}
	}
	if _, err := authz.RoleTokens(c.ClusterToken, c.ClientToken, c.HolderToken, c.OperatorToken); err != nil {
		return err
	}
	switch c.LogStore {
	case "", raftio.LogStoreBoltDB, raftio.LogStoreWAL:
	default:
		return fmt.Errorf("--raft-log-store %q: want %s or %s", c.LogStore, raftio.LogStoreBoltDB, raftio.LogStoreWAL)
	}
	if err := raftio.CheckWALSegmentSize(c.WALSegmentSize); err != nil {
		return err
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return fmt.Errorf("leader lease timeout %v exceeds heartbeat timeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.CommitGrantTTL < 0 || 2*c.CommitGrantTTL > grant.MaxLifetime {
		return fmt.Errorf("--commit-grant-ttl %v outside (0, %v]: its incarnation blocks live twice that, and no longer than a grant may", c.CommitGrantTTL, grant.MaxLifetime/2)
	}
	if c.GrantTTL < 0 || c.GrantTTL > grant.MaxLifetime {
		return fmt.Errorf("--grant-ttl %v outside (0, %v]: holders refuse longer grants (their tombstone floor is kept for that long)", c.GrantTTL, grant.MaxLifetime)
	}
	if err := fsm.CheckSettings(c.settingsFlags()); err != nil {
		return fmt.Errorf("settings flags: %v", err)
	}
	if err := fsm.CheckSettings(c.legacySettings()); err != nil {
		return fmt.Errorf("--legacy-registry-capacity: %v", err)
	}
	if c.Bootstrap && len(c.Peers) > 0 {
		found := false
		for _, p := range c.Peers {
			if p.ID == c.ID {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("--peers does not include this node's id %q", c.ID)
		}
	}
	return nil
}

// legacySettings are the settings a state without replicated settings
// applies under (fsm.Config.Legacy): older builds took only the registry
// capacity from a flag.
func (c *Config) legacySettings() api.Settings {
	return api.Settings{RegistryCapacity: c.LegacyRegistryCapacity}
}

// settingsFlags are the settings flags as a Settings change (zero: not
// given, the fsm's default).
func (c *Config) settingsFlags() api.Settings { return c.Settings }
