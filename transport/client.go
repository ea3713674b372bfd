package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
	"sexton/internal/loopback"
)

// Conn is one authenticated client connection. Any number of goroutines
// may Call on it at once; a reader goroutine hands each response to its
// caller by request id. Once the connection fails every pending and future
// call fails with UNAVAILABLE; make a new Conn (Pool does this for you).
type Conn struct {
	addr    string
	cfg     ClientConfig
	link    *link
	sendMax int // the largest frame the server accepts
	nextID  atomic.Uint64

	mu      sync.Mutex
	pending map[uint64]chan result
	failed  *api.Error // set once the connection is gone

	readerDone chan struct{}
}

// result is what the reader hands a waiting call.
type result struct {
	body     []byte
	err      *api.Error
	connLost bool // err is the connection's failure, not the server's answer
}

// Dial connects to addr and runs the handshake (proving cfg.Token if the
// server asks). A refused token is an UNAUTHENTICATED *api.Error; any other
// failure is UNAVAILABLE naming addr.
func Dial(ctx context.Context, addr string, cfg ClientConfig) (*Conn, error) {
	cfg = cfg.withDefaults()
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, contextError(ctx, "dial "+addr)
		}
		return nil, api.Errorf(api.CodeUnavailable, "dial %s: %v", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	loopback.Unpace(nc)
	if cfg.TLS != nil {
		tc, err := tlsHandshake(ctx, nc, addr, cfg)
		if err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	c := &Conn{
		addr:       addr,
		cfg:        cfg,
		link:       newLink(nc, cfg.FrameTimeout),
		pending:    make(map[uint64]chan result),
		readerDone: make(chan struct{}),
	}
	if err := c.handshake(ctx); err != nil {
		c.link.shutdown(err, nil)
		return nil, err
	}
	c.link.startWriter()
	go c.readLoop()
	return c, nil
}

// Addr is the address the connection was dialled to.
func (c *Conn) Addr() string { return c.addr }

func (c *Conn) handshake(ctx context.Context) error {
	nc := c.link.nc
	start := time.Now()
	deadline := start.Add(c.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return api.Errorf(api.CodeUnavailable, "handshake with %s: %v", c.addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(stage string, err error) error {
		if ctx.Err() != nil {
			return contextError(ctx, "handshake with "+c.addr)
		}
		var ae *api.Error
		if errors.As(err, &ae) {
			if ae.Code == api.CodeUnauthenticated && strings.HasPrefix(ae.Message, PortSpeaksTLS) {
				// A TLS server's answer to this plain client (sniff.go).
				return api.Errorf(ae.Code, "handshake with %s: %s", c.addr, ae.Message)
			}
			return ae
		}
		if isTimeout(err) {
			hint := ""
			if c.cfg.TLS == nil && stage == "hello" {
				// A TLS server waits for our ClientHello and says nothing.
				hint = " (does the server use TLS? this client does not: --tls-ca, --tls-cert, --tls-key)"
			}
			return api.Errorf(api.CodeUnavailable, "handshake with %s: no %s within %s%s", c.addr, stage, deadline.Sub(start).Round(time.Millisecond), hint)
		}
		if tlsRefused(err) {
			// TLS 1.3: the server checks our certificate after our side of
			// the handshake is done, so its refusal arrives as an alert on
			// the first read.
			return api.Errorf(api.CodeUnauthenticated, "TLS with %s: the server refused this client: %v", c.addr, err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return api.Errorf(api.CodeUnavailable, "handshake with %s: connection closed by the server before its %s", c.addr, stage)
		}
		return api.Errorf(api.CodeUnavailable, "handshake with %s: %s: %v", c.addr, stage, err)
	}

	env, err := c.readHandshake(kindHello)
	if err != nil {
		return fail("hello", err)
	}
	var hi hello
	if err := decodeBody(env.body, &hi, false); err != nil {
		return api.Errorf(api.CodeCorrupt, "handshake with %s: hello: %v", c.addr, err)
	}
	if hi.V != protocolVersion {
		e := errVersion(hi.V)
		e.Message = c.addr + ": " + e.Message
		return e
	}
	if hi.Auth && len(hi.Nonce) != nonceLen {
		return api.Errorf(api.CodeCorrupt, "handshake with %s: challenge of %d bytes, want %d", c.addr, len(hi.Nonce), nonceLen)
	}
	ans := authAnswer{V: protocolVersion, MaxFrame: c.cfg.MaxFrame}
	if hi.Auth && c.cfg.Token != "" {
		ans.MAC = tokenMAC(c.cfg.Token, hi.Nonce)
	}
	buf, err := encodeFrame(&envelope{kind: kindAuth}, &ans)
	if err != nil {
		return fail("auth", err)
	}
	if err := c.link.writeDirect(buf, deadline); err != nil {
		return fail("auth", err)
	}
	if _, err := c.readHandshake(kindWelcome); err != nil {
		return fail("welcome", err)
	}
	c.sendMax = clampMaxFrame(hi.MaxFrame)
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return fail("welcome", err)
	}
	return nil
}

// readHandshake reads one handshake frame of the wanted kind; a frame
// carrying an error (a refusal) returns that error.
func (c *Conn) readHandshake(want kind) (envelope, error) {
	frame, err := readFrameBody(c.link.br, handshakeMaxFrame)
	if err != nil {
		return envelope{}, err
	}
	env, err := decodeEnvelope(frame)
	if err != nil {
		return env, err
	}
	if env.err != nil {
		e := *env.err
		if e.Code != api.CodeUnauthenticated {
			e.Message = c.addr + ": " + e.Message
		}
		return env, &e
	}
	if env.kind != want {
		return env, api.Errorf(api.CodeCorrupt, "handshake with %s: expected frame kind %d, got %d", c.addr, want, env.kind)
	}
	return env, nil
}

func (c *Conn) readLoop() {
	defer close(c.readerDone)
	for {
		frame, err := c.link.read(c.cfg.MaxFrame)
		if err != nil {
			c.fail(c.readError(err))
			return
		}
		env, err := decodeEnvelope(frame)
		if err != nil {
			c.fail(c.lost(api.AsError(err).Message))
			return
		}
		switch env.kind {
		case kindResponse:
			c.deliver(env)
		case kindGoAway:
			why := api.Errorf(api.CodeUnavailable, "connection to %s closed by the server", c.addr)
			if env.err != nil {
				why = api.Errorf(env.err.Code, "connection to %s closed by the server: %s", c.addr, env.err.Message)
			}
			c.fail(why)
			return
		default:
			c.fail(c.lost(fmt.Sprintf("unexpected frame kind %d", env.kind)))
			return
		}
	}
}

func (c *Conn) lost(why string) *api.Error {
	return api.Errorf(api.CodeUnavailable, "connection to %s lost: %s", c.addr, why)
}

func (c *Conn) readError(err error) *api.Error {
	if reason := c.link.err(); reason != nil {
		// We closed it (Close, or the writer failed): say that, not the
		// read error it caused.
		var ae *api.Error
		if errors.As(reason, &ae) {
			return ae
		}
		return c.lost(reason.Error())
	}
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return api.Errorf(ae.Code, "connection to %s dropped: %s", c.addr, ae.Message)
	case isTimeout(err):
		return c.lost(fmt.Sprintf("response frame not completed within %s", c.cfg.FrameTimeout))
	case errors.Is(err, io.EOF):
		return c.lost("closed by the server")
	}
	return c.lost(err.Error())
}

func (c *Conn) deliver(env envelope) {
	c.mu.Lock()
	ch, ok := c.pending[env.id]
	delete(c.pending, env.id)
	c.mu.Unlock()
	if ok { // not ok: the caller gave up already
		ch <- result{body: env.body, err: env.err}
	}
}

// fail closes the connection and fails every pending call with why.
func (c *Conn) fail(why *api.Error) {
	c.link.shutdown(why, nil)
	c.mu.Lock()
	if c.failed == nil {
		c.failed = why
	}
	pending := c.pending
	c.pending = make(map[uint64]chan result)
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- result{err: why, connLost: true}
	}
}

// closedErr is the error of a call on a connection already gone.
func (c *Conn) closedErr() *api.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed != nil {
		return c.failed
	}
	return api.Errorf(api.CodeUnavailable, "connection to %s closed", c.addr)
}

// Alive reports whether the connection is still usable.
func (c *Conn) Alive() bool {
	select {
	case <-c.link.closing:
		return false
	default:
		return true
	}
}

// Close closes the connection; pending calls fail with UNAVAILABLE. It
// waits for the connection's goroutines to exit.
func (c *Conn) Close() error {
	c.fail(api.Errorf(api.CodeUnavailable, "connection to %s closed by the client", c.addr))
	<-c.readerDone
	c.link.wait()
	return nil
}

// Call sends method with req (msgpack-encoded) and decodes the answer into
// resp (which may be nil to discard it). ctx bounds the call; without a
// deadline, ClientConfig.CallTimeout applies. The error is always an
// *api.Error (errors.As finds it; errors.Is matches the sentinels): the
// server's own, or TIMEOUT / UNAVAILABLE / FRAME_TOO_LARGE / CORRUPT from
// the transport.
func (c *Conn) Call(ctx context.Context, method string, req, resp any) error {
	_, err := c.call(ctx, method, req, resp)
	return err
}

func (c *Conn) call(ctx context.Context, method string, req, resp any) (outcome, error) {
	if !c.Alive() {
		return notSent, c.closedErr()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.CallTimeout)
		defer cancel()
	}
	what := "call " + method + " to " + c.addr
	if ctx.Err() != nil {
		return notSent, contextError(ctx, what)
	}
	deadline, _ := ctx.Deadline()
	id := c.nextID.Add(1)
	env := envelope{kind: kindRequest, id: id, method: method, timeout: max(time.Until(deadline), time.Millisecond)}
	buf, err := encodeFrame(&env, req)
	if err != nil {
		return notSent, api.AsError(err)
	}
	if n := payloadLen(buf); n > c.sendMax {
		releaseFrame(buf)
		e := errFrameTooLarge(uint64(n), c.sendMax)
		e.Message = method + " request " + e.Message + " of " + c.addr
		return notSent, e
	}
	ch := make(chan result, 1)
	c.mu.Lock()
	if c.failed != nil {
		c.mu.Unlock()
		releaseFrame(buf)
		return notSent, c.failed
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.link.send(buf, ctx.Done()); err != nil {
		c.forget(id)
		if errors.Is(err, errCanceled) {
			return notSent, contextError(ctx, what)
		}
		return notSent, c.closedErr()
	}
	select {
	case r := <-ch:
		if r.err != nil {
			if r.connLost {
				return sentNoAnswer, r.err
			}
			return answered, r.err
		}
		if resp != nil {
			if err := decodeBody(r.body, resp, c.cfg.StrictResponses); err != nil {
				return answered, api.Errorf(api.CodeCorrupt, "decode %s response from %s: %v", method, c.addr, err)
			}
		}
		return answered, nil
	case <-ctx.Done():
		c.forget(id)
		return sentNoAnswer, contextError(ctx, what)
	}
}

func (c *Conn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}
