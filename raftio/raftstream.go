package raftio

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/internal/tlsconf"
	"sexton/raftio/handshake"
	"sexton/transport"
)

// RaftAuth says how a master's Raft connections prove they belong to the
// cluster. The zero value authenticates nothing: anyone who reaches the
// Raft port can vote, append and install snapshots (New warns loudly).
type RaftAuth struct {
	// Token is the cluster token. When set, both ends of every Raft
	// connection prove it (challenge-response, below the Raft RPCs) —
	// inside TLS when TLS is on as well — and the proofs name both ends'
	// server ids, which Peers must then supply.
	Token string
	// Accept are the tokens the acceptor takes a dialer's proof of, Token
	// among them (Token alone when empty): a token is rolled by accepting
	// the new one on every master, then proving it, then dropping the old.
	// The acceptor answers with the token the dialer proved.
	Accept []string
	// Peers is this server's Raft id and the Raft configuration the
	// handshake checks the ids against; required with Token or TLS.
	Peers *RaftPeers
	// TLS, when set, runs every Raft connection over mutual TLS: the
	// acceptor requires a client certificate chained to the CA and the
	// dialer verifies the acceptor's, and each requires the other's to
	// name it a master of the Raft configuration (tlsconf.MasterURI).
	TLS *tlsconf.Source
	// HandshakeTimeout bounds a connection's TLS and token handshake, on
	// both sides (default raftHandshakeTimeout); a dial, connect included,
	// also within the timeout Raft passes to Dial.
	HandshakeTimeout time.Duration
	// Refused, when set, is called for every connection that failed
	// authentication: side is "accept" or "dial", reason one of the
	// refuse* constants.
	Refused func(side, reason string)
}

// OpenRaftWarning starts the WARN a node without token or TLS logs.
const OpenRaftWarning = "the Raft port is open to anyone"

// Open reports whether Raft connections go unauthenticated.
func (a RaftAuth) Open() bool { return a.Token == "" && a.TLS == nil }

// Why a Raft connection was refused (the reason label of
// sexton_raft_conn_refused_total).
const (
	refuseTLS      = "tls"      // TLS handshake failed: no certificate, another CA, not TLS
	refuseToken    = "token"    // the peer does not know the cluster token
	refuseProtocol = "protocol" // the peer does not speak this handshake (a plain Raft transport, a scanner)
	refuseTimeout  = "timeout"  // the handshake did not finish in time
	refuseClosed   = "closed"   // the peer hung up or the connection broke mid-handshake
	refuseBusy     = "busy"     // too many handshakes already pending
	refuseVersion  = "version"  // the peer speaks another version of the handshake
	refuseIdentity = "identity" // the server ids named in the handshake or the certificate do not fit the Raft configuration
)

const (
	// raftHandshakeTimeout is the default bound of an accepted
	// connection's handshake: generous for a loaded peer, short enough
	// that silent dialers cannot pile up.
	raftHandshakeTimeout = 5 * time.Second
	// maxPendingRaftHandshakes bounds the goroutines (and connections)
	// held by handshakes in progress; beyond it new connections are
	// closed at once. Peers are a handful of masters with a pool of 5
	// connections each, so only a flood reaches it.
	maxPendingRaftHandshakes = 64
	// refusalWarnEvery rate-limits the WARN log of refused connections;
	// those in between go to DEBUG and are counted in the next WARN.
	refusalWarnEvery = 10 * time.Second
)

// The token handshake, run on the raw TCP connection (no TLS) or inside
// TLS, before hashicorp/raft reads or writes a byte:
//
//	acceptor → dialer: magic ‖ nA                          (40 bytes)
//	dialer → acceptor: magic ‖ nD ‖ id(D) ‖ id(T) ‖ MAC("D") (74 + ids)
//	acceptor → dialer: MAC("A")                            (32 bytes)
//
// magic is handshake.Magic (its version byte is the handshake's version),
// D is the dialer's server id, T the id it means to reach (the server its
// Raft configuration lists at the dialed address), id(x) a length byte and
// x. MAC(role) is transport.TokenMAC over raftAuthDomain, role, id(D),
// id(T), nA and nD. The acceptor checks the dialer's proof, that T is its
// own id and that D is a server of its configuration (any server while
// that is empty: a server waiting to be added); the dialer checks
// the acceptor's proof before Raft sends anything. Both proofs name both
// ends and the direction, so a proof made for A→B is no proof for B→A,
// A→C or C→B: a relay of one master's dial to another master (or back to
// itself) is refused. The dialer proves first, so a stranger who merely
// reaches the port gets no proof to attack offline; the acceptor proves
// back because an impostor acceptor could depose a leader with a higher
// term in a response. A refusal is a closed connection.
// The framing (magic, lengths, ids) is package handshake's.
const raftAuthDomain = "sexton raft stream auth v2\x00"

var (
	roleAcceptor = []byte{'A'}
	roleDialer   = []byte{'D'}
)

// RaftPeers is what the Raft handshakes (the token proofs, the master
// names of certificates) check server ids against: this server's id and
// its current Raft configuration (hashicorp/raft's latest,
// which includes uncommitted changes), read afresh at every handshake.
type RaftPeers struct {
	self  string
	once  sync.Once
	ready chan struct{}
	conf  atomic.Pointer[func() (raft.Configuration, error)]
}

// NewRaftPeers is the peers of server self, with no configuration yet:
// handshakes wait (within their timeout) until Follow supplies one.
func NewRaftPeers(self string) *RaftPeers {
	return &RaftPeers{self: self, ready: make(chan struct{})}
}

// Follow makes conf the source of the Raft configuration (a node passes
// its raft's GetConfiguration, which reads an atomic value).
func (p *RaftPeers) Follow(conf func() (raft.Configuration, error)) {
	p.conf.Store(&conf)
	p.once.Do(func() { close(p.ready) })
}

// configuration waits until Follow was called, or until deadline.
func (p *RaftPeers) configuration(deadline time.Time) (raft.Configuration, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-p.ready:
		conf, err := (*p.conf.Load())()
		if err != nil {
			return raft.Configuration{}, &refusal{refuseIdentity, fmt.Errorf("this node's Raft configuration: %w", err)}
		}
		return conf, nil
	case <-t.C:
		return raft.Configuration{}, &refusal{refuseTimeout, errors.New("this node's Raft configuration is not loaded yet")}
	}
}

// idAt is the id of the server of conf at address.
func idAt(conf raft.Configuration, address string) (string, bool) {
	for _, s := range conf.Servers {
		if string(s.Address) == address {
			return string(s.ID), true
		}
	}
	return "", false
}

// hasID reports whether id is a server of conf.
func hasID(conf raft.Configuration, id string) bool {
	for _, s := range conf.Servers {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// proofMAC is one side's proof for a connection from dialer to target.
func proofMAC(token string, role []byte, dialer, target string, nonceA, nonceD []byte) []byte {
	return transport.TokenMAC(token, raftAuthDomain, role,
		[]byte{byte(len(dialer))}, []byte(dialer), []byte{byte(len(target))}, []byte(target), nonceA, nonceD)
}

// versionRefusal is the refusal of a magic of another version of this
// handshake, nil for anything else.
func versionRefusal(magic []byte, who string) *refusal {
	if len(magic) == len(handshake.Magic) && string(magic[:len(handshake.Prefix)]) == handshake.Prefix {
		return &refusal{refuseVersion, fmt.Errorf("%s speaks raft handshake version %d, this master version %d: masters of different versions cannot speak Raft with a cluster token; run one version on every master", who, magic[len(handshake.Prefix)], handshake.Version)}
	}
	return nil
}

// refusal is a failed handshake with its reason label.
type refusal struct {
	reason string
	err    error
}

func (r *refusal) Error() string {
	return fmt.Sprintf("raft connection refused (%s): %v", r.reason, r.err)
}
func (r *refusal) Unwrap() error { return r.err }

// ioRefusal classifies a read or write error in a handshake.
func ioRefusal(what string, err error) *refusal {
	var op *net.OpError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &refusal{refuseTimeout, fmt.Errorf("%s: %w", what, err)}
	case errors.As(err, &op) && op.Op == "remote error":
		// A TLS alert: in TLS 1.3 a dialer learns that the acceptor
		// refused its certificate on its first read after the handshake.
		return &refusal{refuseTLS, fmt.Errorf("%s: %w", what, err)}
	default:
		return &refusal{refuseClosed, fmt.Errorf("%s: %w", what, err)}
	}
}

// raftStream is a raft.StreamLayer over TCP that authenticates every
// connection (RaftAuth) before handing it to hashicorp/raft. Handshakes of
// accepted connections run in their own goroutines, so a slow or silent
// dialer delays no one else; finished ones reach Accept through ready.
type raftStream struct {
	ln        net.Listener
	advertise net.Addr
	auth      RaftAuth
	serverTLS *tls.Config // nil without TLS
	log       hclog.Logger

	ready  chan net.Conn
	errs   chan error
	slots  chan struct{} // one per handshake in progress
	closed chan struct{}

	mu       sync.Mutex
	isClosed bool
	pending  map[net.Conn]struct{} // accepted, handshake in progress
	wg       sync.WaitGroup

	lastWarn   atomic.Int64 // unix nanos of the last refusal WARN
	suppressed atomic.Uint64
}

// newRaftStream listens on addr (also the advertised address, which must
// therefore be a concrete IP).
func newRaftStream(addr string, auth RaftAuth, logger hclog.Logger) (*raftStream, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--raft-addr %q: %w", addr, err)
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return nil, fmt.Errorf("--raft-addr %q: not an address peers can dial (it is also the advertised address)", addr)
	}
	if !auth.Open() {
		if auth.Peers == nil || auth.Peers.self == "" {
			return nil, errors.New("raft transport: a cluster token or TLS needs this server's Raft id and configuration (RaftAuth.Peers)")
		}
		if len(auth.Peers.self) > handshake.MaxIDLen {
			return nil, fmt.Errorf("raft server id %q is longer than %d bytes, more than the Raft handshake can name", auth.Peers.self, handshake.MaxIDLen)
		}
	}
	if auth.HandshakeTimeout <= 0 {
		auth.HandshakeTimeout = raftHandshakeTimeout
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("raft transport on %s: %w", addr, err)
	}
	s := &raftStream{
		ln: ln, advertise: tcp, auth: auth, log: logger,
		ready:   make(chan net.Conn),
		errs:    make(chan error),
		slots:   make(chan struct{}, maxPendingRaftHandshakes),
		closed:  make(chan struct{}),
		pending: map[net.Conn]struct{}{},
	}
	if auth.TLS != nil {
		s.serverTLS = auth.TLS.ServerConfig(tlsconf.RequireClientCert)
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Accept returns the next authenticated connection.
func (s *raftStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.ready:
		return c, nil
	case err := <-s.errs:
		return nil, err
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, ends the handshakes in progress and waits for
// their goroutines. Connections already handed to Raft are Raft's.
func (s *raftStream) Close() error {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		return nil
	}
	s.isClosed = true
	close(s.closed)
	err := s.ln.Close()
	for c := range s.pending {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Addr is the advertised address.
func (s *raftStream) Addr() net.Addr { return s.advertise }

func (s *raftStream) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.closed:
				return
			case s.errs <- err: // Raft logs it and backs off before its next Accept
				continue
			}
		}
		select {
		case s.slots <- struct{}{}:
		default:
			_ = c.Close()
			s.refused("accept", c.RemoteAddr(), &refusal{refuseBusy, fmt.Errorf("%d handshakes already in progress", maxPendingRaftHandshakes)})
			continue
		}
		s.mu.Lock()
		if s.isClosed {
			s.mu.Unlock()
			_ = c.Close()
			<-s.slots
			return
		}
		s.pending[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handshake(c)
	}
}

// handshake authenticates one accepted connection and hands it to Accept.
func (s *raftStream) handshake(c net.Conn) {
	defer s.wg.Done()
	conn, err := s.acceptAuth(c)
	s.mu.Lock()
	delete(s.pending, c)
	s.mu.Unlock()
	<-s.slots
	if err != nil {
		_ = c.Close()
		var r *refusal
		if !errors.As(err, &r) {
			r = &refusal{refuseClosed, err}
		}
		s.refused("accept", c.RemoteAddr(), r)
		return
	}
	select {
	case s.ready <- conn:
	case <-s.closed:
		_ = conn.Close()
	}
}

// acceptAuth runs the acceptor's side of TLS and the token handshake
// within the handshake timeout.
func (s *raftStream) acceptAuth(c net.Conn) (net.Conn, error) {
	if s.auth.Open() {
		return c, nil
	}
	var wrap func(net.Conn) *tls.Conn
	if s.serverTLS != nil {
		wrap = func(c net.Conn) *tls.Conn { return tls.Server(c, s.serverTLS) }
	}
	deadline := time.Now().Add(s.auth.HandshakeTimeout)
	return s.authenticate(c, deadline, wrap,
		func(tc *tls.Conn) error { return s.checkDialerCert(tc, deadline) },
		func(c net.Conn) error { return s.acceptToken(c, deadline) })
}

// Dial connects to a peer and authenticates it (and this node to it)
// within timeout.
func (s *raftStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 || timeout > s.auth.HandshakeTimeout {
		timeout = s.auth.HandshakeTimeout
	}
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	conn, err := s.dialAuth(c, string(address), deadline)
	if err != nil {
		_ = c.Close()
		var r *refusal
		if errors.As(err, &r) {
			s.refused("dial", c.RemoteAddr(), r)
		}
		return nil, fmt.Errorf("raft peer %s: %w", address, err)
	}
	return conn, nil
}

func (s *raftStream) dialAuth(c net.Conn, address string, deadline time.Time) (net.Conn, error) {
	if s.auth.Open() {
		return c, nil
	}
	var wrap func(net.Conn) *tls.Conn
	if s.auth.TLS != nil {
		wrap = func(c net.Conn) *tls.Conn { return tls.Client(c, s.auth.TLS.ClientConfigFor(address)) }
	}
	return s.authenticate(c, deadline, wrap,
		func(tc *tls.Conn) error { return s.checkAcceptorCert(tc, address, deadline) },
		func(c net.Conn) error { return s.dialToken(c, address, deadline) })
}

// authenticate is one side's authentication of c before deadline: the TLS
// handshake of wrap's connection and checkCert's check of the peer's
// certificate when TLS is on, then that side's token proof when a token
// is set. It returns the connection Raft is to use.
func (s *raftStream) authenticate(c net.Conn, deadline time.Time, wrap func(net.Conn) *tls.Conn, checkCert func(*tls.Conn) error, proveToken func(net.Conn) error) (net.Conn, error) {
	if err := c.SetDeadline(deadline); err != nil {
		return nil, ioRefusal("set handshake deadline", err)
	}
	conn := c
	if wrap != nil {
		tc := wrap(c)
		if err := tc.Handshake(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, ioRefusal("tls handshake", err)
			}
			return nil, &refusal{refuseTLS, err}
		}
		if err := checkCert(tc); err != nil {
			return nil, err
		}
		conn = tc
	}
	if s.auth.Token != "" {
		if err := proveToken(conn); err != nil {
			return nil, err
		}
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, ioRefusal("clear handshake deadline", err)
	}
	return conn, nil
}

// peerMasterIDs are the master ids the peer's certificate names.
func peerMasterIDs(tc *tls.Conn) []string {
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	return tlsconf.MasterIDs(certs[0])
}

// checkDialerCert refuses a dialer whose certificate does not name it a
// master of this node's Raft configuration (any master while the
// configuration is empty: the leader adding this node is not in it yet).
func (s *raftStream) checkDialerCert(tc *tls.Conn, deadline time.Time) error {
	ids := peerMasterIDs(tc)
	if len(ids) == 0 {
		return &refusal{refuseIdentity, errors.New("the dialer's certificate names no master (no URI SAN sexton://master/<id>): a client's or a holder's certificate cannot speak Raft")}
	}
	conf, err := s.auth.Peers.configuration(deadline)
	if err != nil {
		return err
	}
	if len(conf.Servers) == 0 {
		return nil
	}
	for _, id := range ids {
		if hasID(conf, id) {
			return nil
		}
	}
	return &refusal{refuseIdentity, fmt.Errorf("the dialer's certificate names masters %q, none a server of this node's Raft configuration", ids)}
}

// serverAt is the id of the server this node's Raft configuration lists at
// address; none is a refusal (its message ends with why).
func (s *raftStream) serverAt(address string, deadline time.Time, why string) (string, error) {
	conf, err := s.auth.Peers.configuration(deadline)
	if err != nil {
		return "", err
	}
	target, ok := idAt(conf, address)
	if !ok {
		return "", &refusal{refuseIdentity, fmt.Errorf("no server of this node's Raft configuration has address %s%s", address, why)}
	}
	return target, nil
}

// checkAcceptorCert refuses an acceptor whose certificate does not name
// it the master this node's Raft configuration lists at address.
func (s *raftStream) checkAcceptorCert(tc *tls.Conn, address string, deadline time.Time) error {
	target, err := s.serverAt(address, deadline, "")
	if err != nil {
		return err
	}
	ids := peerMasterIDs(tc)
	for _, id := range ids {
		if id == target {
			return nil
		}
	}
	return &refusal{refuseIdentity, fmt.Errorf("the peer at %s presents a certificate for masters %q, not for %q, the server this node's Raft configuration lists there", address, ids, target)}
}

// acceptToken is the acceptor's side of the token handshake.
func (s *raftStream) acceptToken(c net.Conn, deadline time.Time) error {
	token, self := s.auth.Token, s.auth.Peers.self
	nonceA, err := raftNonce()
	if err != nil {
		return &refusal{refuseClosed, err}
	}
	if _, err := c.Write(append([]byte(handshake.Magic), nonceA...)); err != nil {
		return ioRefusal("send challenge", err)
	}
	magic := make([]byte, len(handshake.Magic))
	if _, err := io.ReadFull(c, magic); err != nil {
		return ioRefusal("read the dialer's hello", err)
	}
	if string(magic) != handshake.Magic {
		if r := versionRefusal(magic, "the dialer"); r != nil {
			return r
		}
		return &refusal{refuseProtocol, fmt.Errorf("the dialer sent %q, not the sexton raft handshake (a Raft transport without the cluster token?)", magic)}
	}
	nonceD := make([]byte, handshake.NonceLen)
	if _, err := io.ReadFull(c, nonceD); err != nil {
		return ioRefusal("read the dialer's nonce", err)
	}
	dialer, err := handshake.ReadID(c)
	if err != nil {
		return ioRefusal("read the dialer's id", err)
	}
	target, err := handshake.ReadID(c)
	if err != nil {
		return ioRefusal("read the dialer's target id", err)
	}
	macD := make([]byte, handshake.MACLen)
	if _, err := io.ReadFull(c, macD); err != nil {
		return ioRefusal("read the dialer's proof", err)
	}
	accept := s.auth.Accept
	if len(accept) == 0 {
		accept = []string{token}
	}
	token = ""
	for _, t := range accept {
		if hmac.Equal(macD, proofMAC(t, roleDialer, dialer, target, nonceA, nonceD)) {
			token = t
			break
		}
	}
	if token == "" {
		return &refusal{refuseToken, errors.New("cluster token mismatch: the dialer's proof is wrong")}
	}
	if target != self {
		return &refusal{refuseIdentity, fmt.Errorf("the dialer %q means to reach server %q, this is %q: a relayed connection, or the dialer's Raft configuration lists this address for another server", dialer, target, self)}
	}
	if dialer == self {
		return &refusal{refuseIdentity, fmt.Errorf("the dialer claims to be this server %q: a reflected connection", self)}
	}
	conf, err := s.auth.Peers.configuration(deadline)
	if err != nil {
		return err
	}
	// A server with an empty configuration waits to be added: the leader
	// adding it is not in its configuration yet, and only it dials.
	if len(conf.Servers) > 0 && !hasID(conf, dialer) {
		return &refusal{refuseIdentity, fmt.Errorf("the dialer %q is not a server of this node's Raft configuration (removed, or not added yet)", dialer)}
	}
	if _, err := c.Write(proofMAC(token, roleAcceptor, dialer, target, nonceA, nonceD)); err != nil {
		return ioRefusal("send proof", err)
	}
	return nil
}

// dialToken is the dialer's side of the token handshake with the server
// at address.
func (s *raftStream) dialToken(c net.Conn, address string, deadline time.Time) error {
	token, self := s.auth.Token, s.auth.Peers.self
	target, err := s.serverAt(address, deadline, ", so the handshake cannot name whom it dials")
	if err != nil {
		return err
	}
	if len(target) > handshake.MaxIDLen {
		return &refusal{refuseIdentity, fmt.Errorf("the server id at %s is longer than %d bytes, more than the Raft handshake can name", address, handshake.MaxIDLen)}
	}
	hello := make([]byte, len(handshake.Magic)+handshake.NonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &refusal{refuseTimeout, fmt.Errorf("no challenge from the peer (a peer without a cluster token waits for Raft bytes): %w", err)}
		}
		return ioRefusal("read the peer's challenge", err)
	}
	if magic := hello[:len(handshake.Magic)]; string(magic) != handshake.Magic {
		if r := versionRefusal(magic, "the peer"); r != nil {
			return r
		}
		return &refusal{refuseProtocol, fmt.Errorf("the peer sent %q, not the sexton raft handshake", magic)}
	}
	nonceA := hello[len(handshake.Magic):]
	nonceD, err := raftNonce()
	if err != nil {
		return &refusal{refuseClosed, err}
	}
	msg := append([]byte(handshake.Magic), nonceD...)
	msg = handshake.AppendID(handshake.AppendID(msg, self), target)
	msg = append(msg, proofMAC(token, roleDialer, self, target, nonceA, nonceD)...)
	if _, err := c.Write(msg); err != nil {
		return ioRefusal("send proof", err)
	}
	macA := make([]byte, handshake.MACLen)
	if _, err := io.ReadFull(c, macA); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &refusal{refuseToken, fmt.Errorf("the peer closed the connection after our proof: a cluster token mismatch, or it refuses this server %q or does not take itself for %q", self, target)}
		}
		return ioRefusal("read the peer's proof", err)
	}
	if !hmac.Equal(macA, proofMAC(token, roleAcceptor, self, target, nonceA, nonceD)) {
		return &refusal{refuseToken, errors.New("cluster token mismatch: the peer's proof is wrong")}
	}
	return nil
}

func raftNonce() ([]byte, error) {
	n := make([]byte, handshake.NonceLen)
	if _, err := rand.Read(n); err != nil {
		return nil, fmt.Errorf("raft handshake nonce: %w", err)
	}
	return n, nil
}

// refused counts a refused connection and logs it: WARN at most once per
// refusalWarnEvery (with how many were refused since), DEBUG otherwise, so
// a scanner or a misconfigured peer cannot flood the log.
func (s *raftStream) refused(side string, remote net.Addr, r *refusal) {
	if s.auth.Refused != nil {
		s.auth.Refused(side, r.reason)
	}
	now := time.Now().UnixNano()
	last := s.lastWarn.Load()
	if now-last >= int64(refusalWarnEvery) && s.lastWarn.CompareAndSwap(last, now) {
		s.log.Warn("raft connection refused", "side", side, "remote", remote, "reason", r.reason,
			"error", r.err, "refused_since_last_warning", s.suppressed.Swap(0))
		return
	}
	s.suppressed.Add(1)
	s.log.Debug("raft connection refused", "side", side, "remote", remote, "reason", r.reason, "error", r.err)
}
