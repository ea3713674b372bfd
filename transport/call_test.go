package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/loopback"
	"sexton/internal/testutil"
)

// Many goroutines share one connection; each must get the answer to its own
// request, and the server must run handlers concurrently (the barrier below
// only opens once every caller's handler is running at the same time).
func TestConcurrentCallsOnOneConnectionGetTheirOwnAnswers(t *testing.T) {
	const callers = 32
	var arrived sync.WaitGroup
	arrived.Add(callers)
	open := make(chan struct{})
	go func() { arrived.Wait(); close(open) }()
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		Register(s, "Barrier", func(ctx context.Context, req *echoReq) (*echoResp, error) {
			arrived.Done()
			select {
			case <-open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &echoResp{N: req.N * 3}, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	callTimesThree(t, c, "Barrier", callers)
	// And a flood of echoes with distinct values.
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				n := g*1000 + j
				var resp echoResp
				if err := c.Call(context.Background(), "Echo", &echoReq{N: n, Pad: strings.Repeat("x", j)}, &resp); err != nil || resp.N != n || len(resp.Pad) != j {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d echo calls got a wrong answer or failed", bad.Load())
	}
}

// A call's deadline expires with TIMEOUT (and DeadlineExceeded); the
// handler sees the caller's deadline through its ctx; the connection keeps
// working for other calls.
func TestCallDeadlineExpires(t *testing.T) {
	handlerSaw := make(chan error, 1)
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("Block", func(ctx context.Context, req *Request) (any, error) {
			<-ctx.Done()
			handlerSaw <- ctx.Err()
			return nil, ctx.Err()
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// Whichever side notices first (the handler's propagated deadline or
	// the client's own), the caller sees TIMEOUT.
	err := c.Call(ctx, "Block", nil, nil)
	requireCode(t, err, api.CodeTimeout)
	if !errors.Is(err, api.ErrTimeout) {
		t.Fatalf("timeout error %v should match ErrTimeout", err)
	}
	if got := <-handlerSaw; !errors.Is(got, context.DeadlineExceeded) {
		t.Fatalf("handler ctx ended with %v, want the propagated deadline", got)
	}
	mustEcho(t, c, 7)
}

// Without a deadline on ctx, ClientConfig.CallTimeout applies.
func TestDefaultCallTimeoutApplies(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		// Ignores its ctx, so only the client's own timer can end the call.
		s.Handle("Block", func(ctx context.Context, req *Request) (any, error) {
			<-release
			return nil, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{CallTimeout: 150 * time.Millisecond})
	err := c.Call(context.Background(), "Block", nil, nil)
	requireCode(t, err, api.CodeTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client-side timeout %v should match context.DeadlineExceeded", err)
	}
	mustEcho(t, c, 5)
}

// Closing the client's connection cancels the ctx of its running handlers.
func TestHandlerContextCancelledWhenConnectionCloses(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("Block", func(ctx context.Context, req *Request) (any, error) {
			close(started)
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, nil
		})
	})
	c, err := Dial(context.Background(), ts.addr, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	callErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		callErr <- c.Call(ctx, "Block", nil, nil)
	}()
	<-started
	c.Close()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx ended with %v, want Canceled", err)
	}
	requireCode(t, <-callErr, api.CodeUnavailable)
	requireCode(t, c.Call(context.Background(), "Echo", &echoReq{}, nil), api.CodeUnavailable)
}

// Handler errors cross the wire typed: an *api.Error (even wrapped) keeps
// its code, message and leader; any other error is INTERNAL with its text;
// an unknown method is INVALID_PARAMS naming it.
func TestTypedErrorsCrossTheWire(t *testing.T) {
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("NotLeader", func(ctx context.Context, req *Request) (any, error) {
			return nil, fmt.Errorf("proposing: %w", &api.Error{Code: api.CodeNotLeader, Message: "follower", Leader: "10.0.0.3:7101"})
		})
		s.Handle("Missing", func(ctx context.Context, req *Request) (any, error) {
			return nil, api.ErrObjectNotFound
		})
		s.Handle("Plain", func(ctx context.Context, req *Request) (any, error) {
			return &echoResp{N: 1}, errors.New("disk on fire")
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	ctx := context.Background()

	err := c.Call(ctx, "NotLeader", nil, nil)
	ae := requireCode(t, err, api.CodeNotLeader)
	if ae.Leader != "10.0.0.3:7101" || !strings.Contains(ae.Message, "follower") {
		t.Fatalf("NOT_LEADER lost its detail: %+v", ae)
	}
	if !errors.Is(err, api.ErrNotLeader) {
		t.Fatal("errors.Is(err, api.ErrNotLeader) is false")
	}
	if !errors.Is(c.Call(ctx, "Missing", nil, nil), api.ErrObjectNotFound) {
		t.Fatal("OBJECT_NOT_FOUND not matched")
	}
	var resp echoResp
	ae = requireCode(t, c.Call(ctx, "Plain", nil, &resp), api.CodeInternal)
	if ae.Message != "disk on fire" || resp.N != 0 {
		t.Fatalf("plain error became %+v, resp %+v", ae, resp)
	}
	ae = requireCode(t, c.Call(ctx, "NoSuchMethod", nil, nil), api.CodeInvalidParams)
	if !strings.Contains(ae.Message, `unknown method "NoSuchMethod"`) {
		t.Fatalf("unknown method message: %q", ae.Message)
	}
	st := ts.Stats()
	var unknown uint64
	for _, m := range st.Methods {
		if m.Method == unknownMethod {
			unknown = m.Calls
		}
	}
	if unknown != 1 {
		t.Fatalf("stats counted %d unknown-method calls, want 1: %+v", unknown, st.Methods)
	}
}

// A panicking handler answers INTERNAL; the server and connection live on.
func TestPanickingHandlerBecomesInternal(t *testing.T) {
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("Boom", func(ctx context.Context, req *Request) (any, error) {
			panic("handler bug")
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	ae := requireCode(t, c.Call(context.Background(), "Boom", nil, nil), api.CodeInternal)
	if !strings.Contains(ae.Message, "Boom panicked") {
		t.Fatalf("panic message: %q", ae.Message)
	}
	mustEcho(t, c, 3)
}

// Register decodes strictly: a field the server does not know is refused
// naming it, rather than silently dropped; the handler never runs.
func TestStrictRequestDecoding(t *testing.T) {
	var ran atomic.Int64
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		Register(s, "Strict", func(ctx context.Context, req *echoReq) (*echoResp, error) {
			ran.Add(1)
			return &echoResp{N: req.N}, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	type newerReq struct {
		N        int  `msgpack:"n"`
		IfAbsent bool `msgpack:"if_absent"`
	}
	ae := requireCode(t, c.Call(context.Background(), "Strict", &newerReq{N: 1, IfAbsent: true}, nil), api.CodeInvalidParams)
	if !strings.Contains(ae.Message, "if_absent") {
		t.Fatalf("message should name the unknown field: %q", ae.Message)
	}
	if ran.Load() != 0 {
		t.Fatal("handler ran on an undecodable request")
	}
	requireCode(t, c.Call(context.Background(), "Strict", "not a struct", nil), api.CodeInvalidParams)
}

// With MaxInflightPerConn busy handlers the server stops reading that
// connection: no more than that many handlers ever run at once, and the
// rest are served once slots free up.
func TestInflightBoundedPerConnection(t *testing.T) {
	const limit, calls = 3, 12
	var running, peak atomic.Int64
	release := make(chan struct{})
	entered := make(chan struct{}, calls)
	ts := startServer(t, ServerConfig{MaxInflightPerConn: limit}, func(s *Server) {
		s.Handle("Slow", func(ctx context.Context, req *Request) (any, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			entered <- struct{}{}
			<-release
			running.Add(-1)
			return nil, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{CallTimeout: time.Minute})
	errs := make(chan error, calls)
	for range calls {
		go func() { errs <- c.Call(context.Background(), "Slow", nil, nil) }()
	}
	for range limit {
		<-entered
	}
	// Give the server every chance to (wrongly) start more.
	time.Sleep(100 * time.Millisecond)
	if got := running.Load(); got != limit {
		t.Fatalf("%d handlers running with a limit of %d", got, limit)
	}
	close(release)
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != limit {
		t.Fatalf("peak concurrency %d, want %d", peak.Load(), limit)
	}
}

// Close waits for running handlers (after cancelling their ctx) and stops
// Serve; the goroutine check in TestMain proves nothing is left behind.
func TestServerCloseWaitsForHandlers(t *testing.T) {
	started := make(chan struct{})
	var finished atomic.Bool
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("Block", func(ctx context.Context, req *Request) (any, error) {
			close(started)
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond)
			finished.Store(true)
			return nil, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{})
	callErr := make(chan error, 1)
	go func() { callErr <- c.Call(context.Background(), "Block", nil, nil) }()
	<-started
	ts.stop()
	if !finished.Load() {
		t.Fatal("Close returned before the handler finished")
	}
	ae := requireCode(t, <-callErr, api.CodeUnavailable)
	if !strings.Contains(ae.Message, "server shutting down") && !strings.Contains(ae.Message, "closed") {
		t.Fatalf("client not told why: %q", ae.Message)
	}
	if _, err := Dial(context.Background(), ts.addr, ClientConfig{DialTimeout: time.Second}); err == nil {
		t.Fatal("dial succeeded after Close")
	}
}

// Responses decode leniently by default (a newer server's extra field is
// ignored) and strictly when the client asks.
func TestResponseDecodingStrictOnRequest(t *testing.T) {
	type newerResp struct {
		N     int    `msgpack:"n"`
		Extra string `msgpack:"extra"`
	}
	ts := startServer(t, ServerConfig{}, func(s *Server) {
		s.Handle("Newer", func(ctx context.Context, req *Request) (any, error) {
			return &newerResp{N: 4, Extra: "new"}, nil
		})
	})
	var resp echoResp
	if err := dial(t, ts.addr, ClientConfig{}).Call(context.Background(), "Newer", nil, &resp); err != nil || resp.N != 4 {
		t.Fatalf("lenient: %v %d", err, resp.N)
	}
	ae := requireCode(t, dial(t, ts.addr, ClientConfig{StrictResponses: true}).Call(context.Background(), "Newer", nil, &resp), api.CodeCorrupt)
	if !strings.Contains(ae.Message, "extra") {
		t.Fatalf("strict: %q", ae.Message)
	}
}

// The Observe hook sees every call with its method (unknown methods
// bucketed) and the error sent; Stats counts the same.
func TestObserveHookAndStats(t *testing.T) {
	type seen struct {
		method string
		code   api.Code
	}
	var mu sync.Mutex
	var got []seen
	ts := startServer(t, ServerConfig{Observe: func(method string, d time.Duration, err error) {
		mu.Lock()
		got = append(got, seen{method, api.CodeOf(err)})
		mu.Unlock()
	}}, func(s *Server) {
		s.Handle("Fail", func(ctx context.Context, req *Request) (any, error) { return nil, api.ErrNoSpace })
	})
	c := dial(t, ts.addr, ClientConfig{})
	mustEcho(t, c, 1)
	c.Call(context.Background(), "Fail", nil, nil)
	c.Call(context.Background(), "garbage\x00name", nil, nil)
	mu.Lock()
	defer mu.Unlock()
	want := []seen{{"Echo", ""}, {"Fail", api.CodeNoSpace}, {unknownMethod, api.CodeInvalidParams}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	byName := map[string]MethodStats{}
	for _, m := range ts.Stats().Methods {
		byName[m.Method] = m
	}
	if byName["Echo"].Calls != 1 || byName["Fail"].Errors != 1 || byName[unknownMethod].Calls != 1 || len(byName) != 3 {
		t.Fatalf("stats %+v", byName)
	}
}

// A connection between a client and a server of one host is not paced on
// either end: Dial's and the one the server accepted run
// loopback.CongestionControl whatever the host's default is.
func TestConnectionsWithinThisHostDoNotPace(t *testing.T) {
	testutil.SkipIfUnpacedByDefault(t, loopback.CongestionControl)
	ts := startServer(t, ServerConfig{}, nil)
	c := dial(t, ts.addr, ClientConfig{})
	if cc := testutil.CongestionControl(t, c.link.nc); cc != loopback.CongestionControl {
		t.Fatalf("a connection to a server on this host runs %s, want %s", cc, loopback.CongestionControl)
	}
	ts.mu.Lock()
	var accepted []net.Conn
	for sc := range ts.conns {
		accepted = append(accepted, sc.link.nc)
	}
	ts.mu.Unlock()
	if len(accepted) != 1 {
		t.Fatalf("the server holds %d connections, want 1", len(accepted))
	}
	if cc := testutil.CongestionControl(t, accepted[0]); cc != loopback.CongestionControl {
		t.Fatalf("the server's end of a connection from this host runs %s, want %s", cc, loopback.CongestionControl)
	}
}
