package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"sexton/internal/loopback"
)

// Server defaults.
const (
	DefaultHandshakeTimeout   = 10 * time.Second
	DefaultFrameTimeout       = 10 * time.Second
	DefaultMaxInflightPerConn = 256
)

// ServerConfig configures a Server. Zero values take the defaults above.
type ServerConfig struct {
	// Token is the cluster token. When set, every connection must prove
	// it (challenge-response) before its first call.
	Token string
	// RoleTokens are further tokens a connection may prove instead of
	// Token; the name of the one it proves is its Caller.Token (Token's
	// name is ClusterTokenName). With any of them set, a proof is required
	// as with Token.
	RoleTokens []NamedToken
	// Authorize, if set, decides every call to a registered method before
	// its handler runs (see Authorizer).
	Authorize Authorizer
	// TLS, when set, wraps every accepted connection: the TLS handshake
	// runs first (under HandshakeTimeout), then the token handshake inside
	// it. Nil serves plain TCP. Whether a client certificate is required
	// is the config's ClientAuth (tlsconf.ServerConfig chooses it).
	TLS *tls.Config
	// MaxFrame bounds every frame a client sends (DefaultMaxFrame if 0).
	MaxFrame int
	// HandshakeTimeout bounds the whole handshake, from accept to the
	// verdict.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds the arrival of one frame once its first byte is
	// in, and the write of each batch of responses. Idle connections are
	// not limited.
	FrameTimeout time.Duration
	// MaxInflightPerConn bounds concurrent handlers per connection; beyond
	// it the server stops reading that connection (TCP back-pressure).
	MaxInflightPerConn int
	// Logger gets refused connections, dropped connections and handler
	// panics. Nil logs nothing.
	Logger hclog.Logger
	// Observe, if set, is called after every call with the method (or
	// "(unknown)"), the handler time and the error sent (nil on success).
	// It runs on the handler's goroutine: keep it cheap.
	Observe func(method string, d time.Duration, err error)
}

// NamedToken is a token a server accepts and the name a connection that
// proves it is known by.
type NamedToken struct {
	Name  string
	Token string
}

// ClusterTokenName is the Caller.Token of a connection that proved
// ServerConfig.Token.
const ClusterTokenName = "cluster"

// Caller is what the server knows of the client of a connection.
type Caller struct {
	// Peer is the client's remote address.
	Peer string
	// Token is the name of the token the connection proved (a
	// NamedToken's, or ClusterTokenName); "" when it proved none.
	Token string
	// Cert is the client's certificate, verified against the CA; nil
	// without TLS or when the client presented none.
	Cert *x509.Certificate
	// Memo is the Authorizer's to keep what it derived from the above,
	// so that it is derived once per connection; the server never reads
	// it. Authorize runs on the connection's read loop, one call at a
	// time, so it needs no lock there.
	Memo any
}

// Authorizer decides whether caller may call method (a registered one).
// A non-nil error refuses the call: it is the answer, and the handler
// does not run. Otherwise done, if not nil, is called with the call's
// outcome (nil on success) once it is answered.
type Authorizer func(caller *Caller, method string) (done func(err error), err error)

// tokens is every token a connection may prove, with its name.
func (c ServerConfig) tokens() []NamedToken {
	var ts []NamedToken
	if c.Token != "" {
		ts = append(ts, NamedToken{Name: ClusterTokenName, Token: c.Token})
	}
	for _, t := range c.RoleTokens {
		if t.Token != "" {
			ts = append(ts, t)
		}
	}
	return ts
}

func (c ServerConfig) withDefaults() ServerConfig {
	c.MaxFrame = clampMaxFrame(c.MaxFrame)
	c.HandshakeTimeout = orDefault(c.HandshakeTimeout, DefaultHandshakeTimeout)
	c.FrameTimeout = orDefault(c.FrameTimeout, DefaultFrameTimeout)
	c.MaxInflightPerConn = orDefault(c.MaxInflightPerConn, DefaultMaxInflightPerConn)
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Server serves registered methods on any number of listeners.
type Server struct {
	cfg ServerConfig
	log hclog.Logger

	mu        sync.RWMutex
	handlers  map[string]HandlerFunc
	async     map[string]AsyncHandlerFunc
	streams   map[string]streamMethod
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	closed    bool
	wg        sync.WaitGroup // one per connection; each waits for its handlers

	stats statsTable
}

// NewServer returns a server with no methods; add them with Handle or
// Register before Serve.
func NewServer(cfg ServerConfig) *Server {
	cfg = cfg.withDefaults()
	return &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		handlers:  make(map[string]HandlerFunc),
		async:     make(map[string]AsyncHandlerFunc),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*serverConn]struct{}),
	}
}

// Handle serves method with h. Registering a method twice, or an empty
// name, is a programming error and panics.
func (s *Server) Handle(method string, h HandlerFunc) {
	s.register(method, h == nil, func() { s.handlers[method] = h })
}

// HandleAsync serves method with an asynchronous handler (see
// AsyncHandlerFunc). Registering a method twice, in either form, or an
// empty name, is a programming error and panics.
func (s *Server) HandleAsync(method string, h AsyncHandlerFunc) {
	s.register(method, h == nil, func() { s.async[method] = h })
}

// register adds a handler (add) for method after checking that the
// method is named, has a handler and is not registered yet, in either form.
func (s *Server) register(method string, noHandler bool, add func()) {
	if method == "" || noHandler {
		panic("transport: a handler needs a method name and a function")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, dup := s.handlers[method]
	_, dupAsync := s.async[method]
	if dup || dupAsync {
		panic("transport: method " + method + " registered twice")
	}
	add()
}

// lookup finds method's handler: an ordinary one, an asynchronous one,
// or neither (both nil), in one look.
func (s *Server) lookup(method string) (HandlerFunc, AsyncHandlerFunc) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.handlers[method], s.async[method]
}

// Serve accepts connections on l until Close, then returns ErrServerClosed.
// Any other accept failure is returned as is (after closing l).
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()

	var pause time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of file descriptors and the like: wait, do not spin.
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "error", err, "pause", pause)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		loopback.Unpace(nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		var sniff *sniffConn
		if s.cfg.TLS != nil {
			sniff = newSniffConn(nc)
			nc = tls.Server(sniff, s.cfg.TLS)
		}
		sc := newServerConn(s, nc)
		sc.sniff = sniff
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go sc.serve()
	}
}

// ListenAndServe listens on addr and serves it (Serve) on a goroutine that
// wg tracks, answering the listener; the goroutine ends at Close.
func (s *Server) ListenAndServe(addr string, wg *sync.WaitGroup) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.Serve(ln)
	}()
	return ln, nil
}

func (s *Server) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

func (s *Server) forget(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
}

// Close stops every listener, closes every connection (telling each client
// UNAVAILABLE "server shutting down"), cancels the handlers' contexts and
// waits for the handlers to return. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for sc := range s.conns {
		conns = append(conns, sc)
	}
	s.mu.Unlock()
	// Outside the lock: a connection still in its handshake writes the
	// go-away synchronously.
	for _, sc := range conns {
		sc.goAway(errServerShuttingDown())
	}
	s.wg.Wait()
	return nil
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	s.mu.RLock()
	open := len(s.conns)
	s.mu.RUnlock()
	return ServerStats{
		Methods:     s.stats.snapshot(),
		Connections: open,
		Refused:     s.stats.refused.Load(),
		Dropped:     s.stats.dropped.Load(),
	}
}

// Methods are the names of the registered methods, sorted.
func (s *Server) Methods() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.handlers)+len(s.async))
	for m := range s.handlers {
		out = append(out, m)
	}
	for m := range s.async {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}
