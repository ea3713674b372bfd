package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"sexton/api"
	"sexton/transport"
)

// Config configures a Client.
type Config struct {
	// Masters are the masters' RPC addresses; the client finds the leader.
	Masters []string
	// Token is the token this caller proves, if the cluster uses one:
	// the masters' and holders' --client-token (or --operator-token), or
	// the cluster token when they have no role tokens.
	Token string
	// TLS, when set, is used for every connection, to the masters and to
	// the holders (see transport.ClientConfig.TLS); nil dials plain TCP.
	TLS *tls.Config
	// AttemptTimeout bounds one attempt at one master (5 s if 0).
	AttemptTimeout time.Duration
	// Timeout bounds how long one master call keeps retrying (15 s if
	// 0); each attempt has its own shorter deadline, so a paused leader
	// is left for the next one. A ctx deadline, if given, replaces the
	// per-attempt deadline.
	// It must stay well below the cluster's session TTL (an hour by
	// default): a retry after the masters forgot the session cannot be
	// recognised as one.
	Timeout time.Duration
	// DFS is the data path for DFS replicas; nil refuses them.
	DFS DFS
	// PutAttempts bounds how often a put is placed again after a holder
	// failed its write (3 if 0).
	PutAttempts int
	// ReadAttempts bounds how often a read asks the master again after a
	// replica no longer had the incarnation it named (4 if 0).
	ReadAttempts int
	// ReadPrefer names the replicas reads try first, as PutOptions.Prefer
	// names segments: a segment id or holder endpoint, then a host ("host"
	// or "host:port"). Replicas named exactly come first, then those on a
	// named host, then the others in the master's order. A program on the
	// same machine as a holder names that machine: Mooncake's reads from
	// the local segment.
	ReadPrefer []string
}

// DFS reads and writes DFS replicas (the client's MOONCAKE_DFS_* settings,
// checked against the master's); EnvDFS is the posix one.
// Write also makes durable, before it returns, the DFS root's put record
// of key's (tenant's) incarnation inc at r (dfsio/DESIGN.md "Range
// records"): the put's PutEnd follows only a successful Write.
type DFS interface {
	Write(ctx context.Context, key, tenant string, inc api.ObjectIncarnation, r api.ReplicaLocation, value []byte) error
	Read(ctx context.Context, r api.ReplicaLocation) ([]byte, error)
}

// DataMaxFrame bounds a holder data frame: one value of at most the bucket
// size limit (256 MiB) plus its envelope.
const DataMaxFrame = 256<<20 + 1<<20

// Client talks to one sexton cluster. It is safe for concurrent use.
type Client struct {
	cfg      Config
	masters  *transport.ClusterClient
	holders  *transport.Pool
	sessions *sessions
	// noPutGrant says a master answered that it does not know PutGrant:
	// puts use PutStart and PutEnd from then on.
	noPutGrant atomic.Bool
}

// New returns a client for the masters in cfg. It does not connect until
// the first call.
func New(cfg Config) (*Client, error) {
	var addrs []string
	for _, a := range cfg.Masters {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("client: no master addresses")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = 5 * time.Second
	}
	if cfg.PutAttempts <= 0 {
		cfg.PutAttempts = 3
	}
	if cfg.ReadAttempts <= 0 {
		cfg.ReadAttempts = 4
	}
	return &Client{
		cfg: cfg,
		masters: transport.NewClusterClient(addrs, transport.ClusterConfig{
			ClientConfig: transport.ClientConfig{Token: cfg.Token, TLS: cfg.TLS, CallTimeout: cfg.AttemptTimeout},
			MaxWait:      cfg.Timeout,
		}),
		holders:  transport.NewPool(transport.ClientConfig{Token: cfg.Token, TLS: cfg.TLS, MaxFrame: DataMaxFrame}),
		sessions: newSessions(),
	}, nil
}

// SetDFS sets the DFS data path after New (its adapter may need the
// client's own master connection to compare settings).
func (c *Client) SetDFS(d DFS) { c.cfg.DFS = d }

// Close closes the client's connections.
func (c *Client) Close() {
	c.masters.Close()
	c.holders.Close()
}

// ID is the client id its sessions carry.
func (c *Client) ID() string { return c.sessions.id }

// Masters is the leader-following connection, for calls this package does
// not wrap (operator RPCs).
func (c *Client) Masters() *transport.ClusterClient { return c.masters }

// Call calls a read-only or self-idempotent master method.
func (c *Client) Call(ctx context.Context, method string, req, resp any) error {
	return c.masters.Call(ctx, method, req, resp)
}

// HolderLink is the holder↔master protocol over this client's masters,
// for programs that act as a holder (the bench simulator, tests).
func (c *Client) HolderLink() transport.HolderLink { return transport.NewHolderLink(c.Call) }

// mutate calls a mutating master method with a fresh session, set into the
// request by setSession. Every retry carries the same session, so the
// request acts at most once; giving up after an attempt that may have run
// is OUTCOME_UNKNOWN.
func (c *Client) mutate(ctx context.Context, method string, req any, setSession func(api.Session), resp any) error {
	s := c.sessions.begin()
	defer c.sessions.end(s.Seq)
	setSession(s)
	start := time.Now()
	err := c.masters.Call(ctx, method, req, resp, transport.Mutation())
	traceMaster(ctx, method, start, err)
	return err
}
