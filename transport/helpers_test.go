package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"sexton/api"
)

// echoReq and echoResp are the test bodies.
type echoReq struct {
	N   int    `msgpack:"n"`
	Pad string `msgpack:"pad,omitempty"`
}

type echoResp struct {
	N   int    `msgpack:"n"`
	Pad string `msgpack:"pad,omitempty"`
}

// testServer is a running server on a loopback port.
type testServer struct {
	*Server
	addr   string
	served chan error
}

// startServer starts a server with register's methods and closes it when
// the test ends.
func startServer(t testing.TB, cfg ServerConfig, register func(*Server)) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, l, cfg, register)
}

func startServerOn(t testing.TB, l net.Listener, cfg ServerConfig, register func(*Server)) *testServer {
	t.Helper()
	s := NewServer(cfg)
	Register(s, "Echo", func(ctx context.Context, req *echoReq) (*echoResp, error) {
		return &echoResp{N: req.N, Pad: req.Pad}, nil
	})
	if register != nil {
		register(s)
	}
	ts := &testServer{Server: s, addr: l.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- s.Serve(l) }()
	t.Cleanup(ts.stop)
	return ts
}

// stop closes the server and checks Serve returned ErrServerClosed.
func (ts *testServer) stop() {
	ts.Close()
	if err := <-ts.served; !errors.Is(err, ErrServerClosed) {
		panic("Serve returned " + err.Error())
	}
	ts.served <- ErrServerClosed // let a second stop pass
}

// dial connects with cfg and closes the connection when the test ends.
func dial(t testing.TB, addr string, cfg ClientConfig) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), addr, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mustEcho checks that c answers an echo call correctly.
func mustEcho(t testing.TB, c *Conn, n int) {
	t.Helper()
	var resp echoResp
	if err := c.Call(context.Background(), "Echo", &echoReq{N: n}, &resp); err != nil {
		t.Fatalf("echo %d: %v", n, err)
	}
	if resp.N != n {
		t.Fatalf("echo %d answered %d", n, resp.N)
	}
}

// callTimesThree calls method from n goroutines at once, caller i sending
// N = i, and checks that each gets 3i back: its own answer.
func callTimesThree(t testing.TB, c *Conn, method string, n int) {
	t.Helper()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var resp echoResp
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := c.Call(ctx, method, &echoReq{N: i}, &resp); err != nil {
				errs <- err
			} else if resp.N != 3*i {
				errs <- fmt.Errorf("caller %d got %d, want %d", i, resp.N, 3*i)
			} else {
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// codeOf asserts err is an *api.Error of code.
func requireCode(t testing.TB, err error, code api.Code) *api.Error {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *api.Error", err, err)
	}
	if ae.Code != code {
		t.Fatalf("error code %s, want %s (%v)", ae.Code, code, err)
	}
	return ae
}

// rawHandshake opens a TCP connection and completes the handshake by hand,
// so a test can then write arbitrary bytes as an authenticated client.
func rawHandshake(t testing.TB, addr, token string) (net.Conn, *link) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	l := newLink(nc, 0)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	frame, err := readFrameBody(l.br, handshakeMaxFrame)
	if err != nil {
		t.Fatalf("reading hello: %v", err)
	}
	env, err := decodeEnvelope(frame)
	if err != nil || env.kind != kindHello {
		t.Fatalf("bad hello: %v kind %d", err, env.kind)
	}
	var hi hello
	if err := decodeBody(env.body, &hi, true); err != nil {
		t.Fatal(err)
	}
	ans := authAnswer{V: protocolVersion, MaxFrame: DefaultMaxFrame}
	if token != "" {
		ans.MAC = tokenMAC(token, hi.Nonce)
	}
	buf, err := encodeFrame(&envelope{kind: kindAuth}, &ans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	frame, err = readFrameBody(l.br, handshakeMaxFrame)
	if err != nil {
		t.Fatalf("reading welcome: %v", err)
	}
	if env, err := decodeEnvelope(frame); err != nil || env.kind != kindWelcome || env.err != nil {
		t.Fatalf("not welcomed: %v %v", err, env.err)
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, l
}

// readUntilClosed reads from a raw connection until the server closes it
// and returns the go-away (or refusal) error it sent first, if any.
func readUntilClosed(t testing.TB, nc net.Conn, br interface {
	Read([]byte) (int, error)
}) *api.Error {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var got *api.Error
	for {
		frame, err := readFrameBody(br, DefaultMaxFrame)
		if err != nil {
			if isTimeout(err) {
				t.Fatalf("server did not close the connection")
			}
			return got
		}
		if env, err := decodeEnvelope(frame); err == nil && env.err != nil && (env.kind == kindGoAway || env.kind == kindWelcome) {
			got = env.err
		}
	}
}

// rawConn opens a bare TCP connection to addr.
func rawConn(t testing.TB, addr string) (net.Conn, *link) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc, newLink(nc, 0)
}
