package master

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
	"sexton/transport"
)

// RaftAuth says how a master's Raft connections prove they belong to the
// cluster. The zero value authenticates nothing: anyone who reaches the
// Raft port can vote, append and install snapshots (New warns loudly).
type RaftAuth struct {
	// Token is the cluster token. When set, both ends of every Raft
	// connection prove it (challenge-response, below the Raft RPCs) —
	// inside TLS when TLS is on as well.
	Token string
	// TLS, when set, runs every Raft connection over mutual TLS: the
	// acceptor requires a client certificate chained to the CA and the
	// dialer verifies the acceptor's.
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

// openRaftWarning starts the WARN a node without token or TLS logs.
const openRaftWarning = "the Raft port is open to anyone"

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
//	acceptor → dialer: raftAuthMagic ‖ nonceA                 (40 bytes)
//	dialer → acceptor: raftAuthMagic ‖ nonceD ‖ MAC(D, nA, nD) (72 bytes)
//	acceptor → dialer: MAC(A, nA, nD)                          (32 bytes)
//
// MAC is transport.TokenMAC with raftAuthDomain and a one-byte role. The
// dialer proves first, so an unauthenticated acceptor never holds a proof
// it could attack offline; the acceptor proves back before the dialer
// sends a Raft RPC, so an impostor cannot answer one (a higher term in a
// response deposes a leader as surely as one in a request). Both nonces
// are in both proofs and the roles differ, so no proof can be replayed or
// reflected. A refusal is a closed connection.
const (
	raftAuthMagic  = "SXRAFT\x00\x01" // 8 bytes; the last is the version
	raftAuthDomain = "sexton raft stream auth v1\x00"
	raftNonceLen   = 32
	raftMACLen     = 32 // HMAC-SHA256
)

var (
	roleAcceptor = []byte{'A'}
	roleDialer   = []byte{'D'}
)

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
	return s.authenticate(c, time.Now().Add(s.auth.HandshakeTimeout), wrap, acceptToken)
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
	return s.authenticate(c, deadline, wrap, dialToken)
}

// authenticate is one side's authentication of c before deadline: the TLS
// handshake of wrap's connection when TLS is on, then that side's token
// proof when a token is set. It returns the connection Raft is to use.
func (s *raftStream) authenticate(c net.Conn, deadline time.Time, wrap func(net.Conn) *tls.Conn, proveToken func(net.Conn, string) error) (net.Conn, error) {
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
		conn = tc
	}
	if s.auth.Token != "" {
		if err := proveToken(conn, s.auth.Token); err != nil {
			return nil, err
		}
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, ioRefusal("clear handshake deadline", err)
	}
	return conn, nil
}

// acceptToken is the acceptor's side of the token handshake.
func acceptToken(c net.Conn, token string) error {
	nonceA, err := raftNonce()
	if err != nil {
		return &refusal{refuseClosed, err}
	}
	if _, err := c.Write(append([]byte(raftAuthMagic), nonceA...)); err != nil {
		return ioRefusal("send challenge", err)
	}
	magic := make([]byte, len(raftAuthMagic))
	if _, err := io.ReadFull(c, magic); err != nil {
		return ioRefusal("read the dialer's hello", err)
	}
	if string(magic) != raftAuthMagic {
		return &refusal{refuseProtocol, fmt.Errorf("the dialer sent %q, not the sexton raft handshake (a Raft transport without the cluster token?)", magic)}
	}
	answer := make([]byte, raftNonceLen+raftMACLen)
	if _, err := io.ReadFull(c, answer); err != nil {
		return ioRefusal("read the dialer's proof", err)
	}
	nonceD, macD := answer[:raftNonceLen], answer[raftNonceLen:]
	if !hmac.Equal(macD, transport.TokenMAC(token, raftAuthDomain, roleDialer, nonceA, nonceD)) {
		return &refusal{refuseToken, errors.New("cluster token mismatch: the dialer's proof is wrong")}
	}
	if _, err := c.Write(transport.TokenMAC(token, raftAuthDomain, roleAcceptor, nonceA, nonceD)); err != nil {
		return ioRefusal("send proof", err)
	}
	return nil
}

// dialToken is the dialer's side of the token handshake.
func dialToken(c net.Conn, token string) error {
	hello := make([]byte, len(raftAuthMagic)+raftNonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &refusal{refuseTimeout, fmt.Errorf("no challenge from the peer (a peer without a cluster token waits for Raft bytes): %w", err)}
		}
		return ioRefusal("read the peer's challenge", err)
	}
	if string(hello[:len(raftAuthMagic)]) != raftAuthMagic {
		return &refusal{refuseProtocol, fmt.Errorf("the peer sent %q, not the sexton raft handshake", hello[:len(raftAuthMagic)])}
	}
	nonceA := hello[len(raftAuthMagic):]
	nonceD, err := raftNonce()
	if err != nil {
		return &refusal{refuseClosed, err}
	}
	msg := append([]byte(raftAuthMagic), nonceD...)
	msg = append(msg, transport.TokenMAC(token, raftAuthDomain, roleDialer, nonceA, nonceD)...)
	if _, err := c.Write(msg); err != nil {
		return ioRefusal("send proof", err)
	}
	macA := make([]byte, raftMACLen)
	if _, err := io.ReadFull(c, macA); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &refusal{refuseToken, errors.New("cluster token mismatch: the peer closed the connection after our proof")}
		}
		return ioRefusal("read the peer's proof", err)
	}
	if !hmac.Equal(macA, transport.TokenMAC(token, raftAuthDomain, roleAcceptor, nonceA, nonceD)) {
		return &refusal{refuseToken, errors.New("cluster token mismatch: the peer's proof is wrong")}
	}
	return nil
}

func raftNonce() ([]byte, error) {
	n := make([]byte, raftNonceLen)
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
