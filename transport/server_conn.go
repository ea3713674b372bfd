package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
)

// serverConn is one accepted connection: a handshake, then a reader that
// dispatches each request to its own handler goroutine, bounded by slots.
type serverConn struct {
	srv     *Server
	link    *link
	peer    string
	peerMax int    // the largest frame the client accepts
	caller  Caller // who the client proved to be, set by the handshake
	slots   chan struct{}
	work    chan call    // to a parked worker; unbuffered
	idle    atomic.Int32 // parked workers
	inRun   sync.WaitGroup
	// tlsPending: the TLS handshake has not finished. A go-away then
	// closes without a frame: writing one would wait for the handshake
	// (crypto/tls serialises them), i.e. for a silent client's timeout.
	tlsPending atomic.Bool
	// sniff is the raw connection under TLS (nil without): its first byte
	// tells a TLS client from a plain one (sniff.go).
	sniff *sniffConn
}

func newServerConn(s *Server, nc net.Conn) *serverConn {
	sc := &serverConn{
		srv:    s,
		link:   newLink(nc, s.cfg.FrameTimeout),
		peer:   nc.RemoteAddr().String(),
		caller: Caller{Peer: nc.RemoteAddr().String()},
		slots:  make(chan struct{}, s.cfg.MaxInflightPerConn),
		work:   make(chan call),
	}
	sc.tlsPending.Store(isTLS(nc))
	return sc
}

func errServerShuttingDown() *api.Error {
	return api.Errorf(api.CodeUnavailable, "server shutting down")
}

// goAway closes the connection after telling the client why.
func (sc *serverConn) goAway(why *api.Error) {
	if sc.tlsPending.Load() {
		sc.link.shutdown(why, nil)
		return
	}
	buf, err := encodeFrame(&envelope{kind: kindGoAway, err: why}, nil)
	if err != nil {
		buf = nil
	}
	sc.link.shutdown(why, buf)
}

func (sc *serverConn) serve() {
	defer sc.srv.wg.Done()
	defer sc.srv.forget(sc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	if err := sc.handshake(); err != nil {
		sc.srv.log.Warn("connection refused", "peer", sc.peer, "error", err)
		sc.link.wait()
		return
	}
	sc.link.startWriter()
	sc.readLoop(ctx)
	cancel()
	sc.inRun.Wait()
	sc.link.wait()
}

// handshake runs hello → auth → welcome under one deadline. On failure it
// counts the refusal, tells the client why when it can, and closes.
func (sc *serverConn) handshake() error {
	err := sc.handshakeSteps()
	if err == nil {
		return nil
	}
	sc.srv.stats.refused.Add(1)
	var why *refusal
	if errors.As(err, &why) {
		buf, encErr := encodeFrame(&envelope{kind: kindWelcome, err: why.err}, nil)
		if encErr != nil {
			buf = nil
		}
		sc.link.shutdown(why.err, buf)
		return why.err
	}
	sc.link.shutdown(err, nil)
	return err
}

// refusal is a handshake failure the client is told about.
type refusal struct{ err *api.Error }

func (r *refusal) Error() string { return r.err.Error() }

func refuse(e *api.Error) error { return &refusal{err: e} }

func (sc *serverConn) handshakeSteps() error {
	s := sc.srv
	nc := sc.link.nc
	deadline := time.Now().Add(s.cfg.HandshakeTimeout)
	if err := nc.SetReadDeadline(deadline); err != nil {
		return err
	}
	if sc.sniff != nil {
		if err := sc.sniff.sniff(deadline); err != nil {
			return err
		}
	}
	if tc, ok := nc.(*tls.Conn); ok {
		// Explicitly, so a failure is logged as what it is rather than as
		// an unreadable hello; nothing can be told to the client in our
		// framing, TLS sends its own alert.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("TLS handshake not completed within %s", s.cfg.HandshakeTimeout)
			}
			return fmt.Errorf("TLS handshake: %w", err)
		}
		sc.tlsPending.Store(false)
		if chains := tc.ConnectionState().VerifiedChains; len(chains) > 0 && len(chains[0]) > 0 {
			sc.caller.Cert = chains[0][0]
		}
	}
	nonce, err := newNonce()
	if err != nil {
		return refuse(api.Errorf(api.CodeInternal, "%v", err))
	}
	tokens := s.cfg.tokens()
	hi := hello{V: protocolVersion, Nonce: nonce, Auth: len(tokens) > 0, MaxFrame: s.cfg.MaxFrame}
	buf, err := encodeFrame(&envelope{kind: kindHello}, &hi)
	if err != nil {
		return refuse(api.AsError(err))
	}
	if err := sc.link.writeDirect(buf, deadline); err != nil {
		return fmt.Errorf("sending hello: %w", err)
	}
	if b, err := sc.link.br.Peek(1); err == nil && b[0] == tlsRecordHandshake && sc.sniff == nil {
		// A frame's first byte is the top of a length far below 2^24; a
		// TLS ClientHello starts with 0x16. The client has failed on our
		// hello by now; the log says why.
		return fmt.Errorf("a TLS client on this plain port (%s)", PortIsPlain)
	}
	frame, err := readFrameBody(sc.link.br, handshakeMaxFrame)
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			return refuse(api.Errorf(ae.Code, "handshake: %s (is the peer a sexton transport client?)", ae.Message))
		}
		if isTimeout(err) {
			return fmt.Errorf("handshake not completed within %s", s.cfg.HandshakeTimeout)
		}
		return fmt.Errorf("reading the handshake: %w", err)
	}
	env, err := decodeEnvelope(frame)
	if err != nil {
		return refuse(api.Errorf(api.CodeCorrupt, "handshake: %s", api.AsError(err).Message))
	}
	if env.kind != kindAuth {
		return refuse(api.Errorf(api.CodeUnauthenticated, "handshake: expected an auth frame, got kind %d", env.kind))
	}
	var ans authAnswer
	if err := decodeBody(env.body, &ans, false); err != nil {
		return refuse(api.Errorf(api.CodeCorrupt, "handshake: auth frame: %v", err))
	}
	name, why := verifyAnswer(tokens, nonce, &ans)
	if why != nil {
		return refuse(why)
	}
	sc.caller.Token = name
	sc.peerMax = clampMaxFrame(ans.MaxFrame)
	buf, err = encodeFrame(&envelope{kind: kindWelcome}, &welcome{V: protocolVersion})
	if err != nil {
		return refuse(api.AsError(err))
	}
	if err := sc.link.writeDirect(buf, deadline); err != nil {
		return fmt.Errorf("sending welcome: %w", err)
	}
	return nc.SetDeadline(time.Time{})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readLoop reads requests until the connection fails or closes. It takes a
// slot before reading each frame: with every slot busy it stops reading, so
// a flooding client is slowed by TCP instead of growing our memory.
func (sc *serverConn) readLoop(ctx context.Context) {
	for {
		select {
		case sc.slots <- struct{}{}:
		case <-sc.link.closing:
			return
		}
		env, tail, err := sc.readRequest()
		if err != nil {
			<-sc.slots
			sc.readFailed(err)
			return
		}
		switch env.kind {
		case kindRequest:
		case kindGoAway:
			<-sc.slots
			sc.link.shutdown(env.err, nil)
			return
		default:
			<-sc.slots
			sc.drop(api.Errorf(api.CodeCorrupt, "unexpected frame kind %d after the handshake", env.kind))
			return
		}
		h, async := sc.srv.lookup(env.method)
		var done func(error)
		if (h != nil || async != nil) && sc.srv.cfg.Authorize != nil {
			var refused error
			done, refused = sc.srv.cfg.Authorize(&sc.caller, env.method)
			if refused != nil {
				h, async = refusedHandler(refused), nil
			}
		}
		if async != nil {
			sc.runAsync(env, async, done)
			continue
		}
		sc.dispatch(ctx, call{env: env, h: h, done: done, tail: tail})
		if tail != nil && tail.r != nil {
			// The handler reads the rest of the frame from the
			// connection; the next frame starts after it.
			if err := sc.afterTail(tail); err != nil {
				sc.readFailed(err)
				return
			}
		}
	}
}

// maxIdleWorkers is how many finished handler goroutines per connection
// stay parked for the next request. A fresh goroutine per request pays for
// growing its stack every time; a parked one already has it.
const maxIdleWorkers = 16

// call is a request with the handler the read loop found for its method
// (nil: no such method).
type call struct {
	env  envelope
	h    HandlerFunc
	done func(error) // the Authorizer's, or nil
	tail *Tail       // a streamed request's last body field, or nil
}

// refusedHandler answers a call the Authorizer refused with its verdict.
func refusedHandler(err error) HandlerFunc {
	return func(context.Context, *Request) (any, error) { return nil, err }
}

// dispatch hands c to a parked worker, or starts one. The caller holds a
// slot for c; the worker releases it.
func (sc *serverConn) dispatch(ctx context.Context, c call) {
	select {
	case sc.work <- c:
		return
	default:
	}
	sc.inRun.Add(1)
	go sc.worker(ctx, c)
}

// worker serves c, then parks for more while few enough others are
// parked, until the connection closes.
func (sc *serverConn) worker(ctx context.Context, c call) {
	defer sc.inRun.Done()
	for {
		sc.run(ctx, c)
		if sc.idle.Add(1) > maxIdleWorkers {
			sc.idle.Add(-1)
			return
		}
		select {
		case c = <-sc.work:
			sc.idle.Add(-1)
		case <-sc.link.closing:
			sc.idle.Add(-1)
			return
		}
	}
}

func (sc *serverConn) readFailed(err error) {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		sc.drop(ae)
	case isTimeout(err):
		sc.drop(api.Errorf(api.CodeTimeout, "frame not completed within %s", sc.srv.cfg.FrameTimeout))
	default: // EOF, reset, or our own close: nothing to tell the peer
		sc.link.shutdown(err, nil)
	}
}

// drop closes a connection that broke the protocol, telling the client.
func (sc *serverConn) drop(why *api.Error) {
	select {
	case <-sc.link.closing:
		return // already closing; the read error is a consequence
	default:
	}
	sc.srv.stats.dropped.Add(1)
	sc.srv.log.Warn("connection dropped", "peer", sc.peer, "error", why)
	sc.goAway(why)
}

// run serves one request and queues its response.
func (sc *serverConn) run(ctx context.Context, c call) {
	defer func() { <-sc.slots }()
	env, h := c.env, c.h
	start := time.Now()
	name := env.method
	var resp any
	var err error
	if h == nil {
		name = unknownMethod
		err = api.Errorf(api.CodeInvalidParams, "unknown method %q", env.method)
	} else {
		hctx := ctx
		if env.timeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, env.timeout)
			defer cancel()
		}
		resp, err = sc.invoke(h, hctx, &Request{Method: env.method, Peer: sc.peer, body: env.body, tail: c.tail})
	}
	if c.tail != nil {
		c.tail.finish()
	}
	if c.done != nil {
		c.done(err)
	}
	if buf := sc.respond(env, name, start, resp, err); buf != nil {
		_ = sc.link.send(buf, nil) // fails only when the connection is closing
	}
}

// respond records the call's outcome and encodes its response frame (nil
// when even an error response cannot be encoded).
func (sc *serverConn) respond(env envelope, name string, start time.Time, resp any, err error) *frameBuf {
	s := sc.srv
	d := time.Since(start)
	out := envelope{kind: kindResponse, id: env.id}
	if err != nil {
		out.err = wireError(err, env.method)
	}
	s.stats.record(name, d, err != nil)
	if s.cfg.Observe != nil {
		var obsErr error
		if out.err != nil {
			obsErr = out.err
		}
		s.cfg.Observe(name, d, obsErr)
	}
	return sc.encodeResponse(&out, resp, env.method)
}

// runAsync calls an asynchronous handler on the read loop. The request
// keeps its slot, and the connection's close waits for it (inRun), until
// its response is queued for the writer. The reply does not wait for
// that: it usually runs on a goroutine that answers many callers (the
// master's remove committer), which must not wait for one slow client's
// socket, so when the writer's queue is full the frame is handed to a
// goroutine of its own, still holding the slot, so that a client that
// reads nothing gets no more than its slots' worth of them.
func (sc *serverConn) runAsync(env envelope, h AsyncHandlerFunc, done func(error)) {
	start := time.Now()
	sc.inRun.Add(1)
	release := func() {
		<-sc.slots
		sc.inRun.Done()
	}
	var answered atomic.Bool
	reply := func(resp any, err error) {
		if !answered.CompareAndSwap(false, true) {
			return
		}
		if done != nil {
			done(err)
		}
		buf := sc.respond(env, env.method, start, resp, err)
		if buf == nil || sc.link.trySend(buf) {
			release()
			return
		}
		go func() {
			defer release()
			_ = sc.link.send(buf, nil) // fails only when the connection is closing
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			sc.srv.log.Error("handler panicked", "method", env.method, "peer", sc.peer, "panic", r, "stack", string(debug.Stack()))
			reply(nil, api.Errorf(api.CodeInternal, "handler for %s panicked: %v", env.method, r))
		}
	}()
	h(&Request{Method: env.method, Peer: sc.peer, body: env.body}, reply)
}

// invoke calls h, turning a panic into INTERNAL so one bad handler cannot
// take the process down.
func (sc *serverConn) invoke(h HandlerFunc, ctx context.Context, req *Request) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			sc.srv.log.Error("handler panicked", "method", req.Method, "peer", sc.peer, "panic", r, "stack", string(debug.Stack()))
			resp, err = nil, api.Errorf(api.CodeInternal, "handler for %s panicked: %v", req.Method, r)
		}
	}()
	return h(ctx, req)
}

// encodeResponse encodes the response, replacing it with an error when the
// body cannot be encoded or would exceed the client's frame limit.
func (sc *serverConn) encodeResponse(out *envelope, resp any, method string) *frameBuf {
	if out.err != nil {
		resp = nil
	}
	buf, err := encodeFrame(out, resp)
	if err != nil {
		out.err = api.Errorf(api.CodeInternal, "encode %s response: %v", method, api.AsError(err).Message)
		buf, err = encodeFrame(out, nil)
	} else if payloadLen(buf) > sc.peerMax {
		n := payloadLen(buf)
		releaseFrame(buf)
		out.err = errFrameTooLarge(uint64(n), sc.peerMax)
		out.err.Message = "response " + out.err.Message + " of the client"
		buf, err = encodeFrame(out, nil)
	}
	if err != nil {
		sc.srv.log.Error("cannot encode a response", "error", err)
		return nil
	}
	return buf
}

// wireError is the *api.Error sent for a handler's error. A bare context
// error (the handler gave up because the caller's deadline passed or the
// connection is closing) gets the code that says so instead of INTERNAL.
func wireError(err error, method string) *api.Error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return api.Errorf(api.CodeTimeout, "%s: the caller's deadline passed: %v", method, err)
		case errors.Is(err, context.Canceled):
			return api.Errorf(api.CodeUnavailable, "%s: canceled: %v", method, err)
		}
	}
	return api.AsError(err)
}
