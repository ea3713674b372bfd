package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
)

// With a cluster token on the server, a client with the wrong token or none
// is refused with UNAUTHENTICATED "cluster token mismatch" at Dial, and no
// handler ever runs; the right token works.
func TestClusterTokenEnforced(t *testing.T) {
	var ran atomic.Int64
	ts := startServer(t, ServerConfig{Token: "correct horse"}, func(s *Server) {
		s.Handle("Count", func(ctx context.Context, req *Request) (any, error) {
			ran.Add(1)
			return nil, nil
		})
	})
	for _, token := range []string{"wrong", ""} {
		c, err := Dial(context.Background(), ts.addr, ClientConfig{Token: token})
		if err == nil {
			c.Call(context.Background(), "Count", nil, nil)
			c.Close()
			t.Fatalf("token %q accepted", token)
		}
		ae := requireCode(t, err, api.CodeUnauthenticated)
		if !strings.Contains(ae.Message, "cluster token mismatch") || !errors.Is(err, api.ErrUnauthenticated) {
			t.Fatalf("token %q refused with %q", token, ae.Message)
		}
	}
	// A raw client that skips the auth frame and sends a request instead
	// is refused too.
	nc, l := rawConn(t, ts.addr)
	if _, err := readFrameBody(l.br, handshakeMaxFrame); err != nil {
		t.Fatal(err)
	}
	buf, _ := encodeFrame(&envelope{kind: kindRequest, id: 1, method: "Count"}, nil)
	if _, err := nc.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if why := readUntilClosed(t, nc, l.br); why == nil || why.Code != api.CodeUnauthenticated {
		t.Fatalf("request without auth answered %v", why)
	}

	if ran.Load() != 0 {
		t.Fatalf("handler ran %d times for unauthenticated clients", ran.Load())
	}
	if ts.Stats().Refused != 3 {
		t.Fatalf("refused = %d, want 3", ts.Stats().Refused)
	}
	c := dial(t, ts.addr, ClientConfig{Token: "correct horse"})
	if err := c.Call(context.Background(), "Count", nil, nil); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", ran.Load())
	}
}

// A server without a token accepts clients with or without one, so tokens
// can be rolled out clients first.
func TestServerWithoutTokenAcceptsAnyClient(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	mustEcho(t, dial(t, ts.addr, ClientConfig{Token: "anything"}), 1)
	mustEcho(t, dial(t, ts.addr, ClientConfig{}), 2)
}

// The token never crosses the wire: the client answers the challenge with
// an HMAC that a fake server can check but that does not contain the token.
func TestTokenNeverSentInClear(t *testing.T) {
	const token = "s3cret-cluster-token"
	nonce := bytes.Repeat([]byte{0xab}, nonceLen)
	l, captured := testutil.AcceptOnce(t, func(nc net.Conn) []byte {
		buf, _ := encodeFrame(&envelope{kind: kindHello}, &hello{V: protocolVersion, Nonce: nonce, Auth: true, MaxFrame: DefaultMaxFrame})
		nc.Write(buf.Bytes())
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		frame, err := readFrameBody(nc, handshakeMaxFrame)
		if err != nil {
			return nil
		}
		// Refuse, so the client's Dial returns.
		buf, _ = encodeFrame(&envelope{kind: kindWelcome, err: api.Errorf(api.CodeUnauthenticated, "cluster token mismatch")}, nil)
		nc.Write(buf.Bytes())
		return frame
	})
	_, err := Dial(context.Background(), l.Addr().String(), ClientConfig{Token: token})
	requireCode(t, err, api.CodeUnauthenticated)
	frame := <-captured
	if frame == nil {
		t.Fatal("fake server captured nothing")
	}
	if bytes.Contains(frame, []byte(token)) {
		t.Fatal("the token was sent in clear")
	}
	env, err := decodeEnvelope(frame)
	if err != nil {
		t.Fatal(err)
	}
	var ans authAnswer
	if err := decodeBody(env.body, &ans, true); err != nil {
		t.Fatal(err)
	}
	one := func(tok string) *api.Error {
		_, e := verifyAnswer([]NamedToken{{Name: "x", Token: tok}}, nonce, &ans)
		return e
	}
	if one(token) != nil || one("other") == nil {
		t.Fatal("the answer does not prove exactly this token")
	}
}

// A peer speaking another protocol version is refused with both versions
// named, in either direction.
func TestProtocolVersionMismatchRefused(t *testing.T) {
	if _, e := verifyAnswer(nil, nil, &authAnswer{V: 2}); e == nil || !strings.Contains(e.Message, "version 2") {
		t.Fatalf("server accepted version 2: %v", e)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf, _ := encodeFrame(&envelope{kind: kindHello}, &hello{V: 9, Nonce: make([]byte, nonceLen)})
		nc.Write(buf.Bytes())
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		nc.Read(make([]byte, 1))
	}()
	_, err = Dial(context.Background(), l.Addr().String(), ClientConfig{})
	ae := requireCode(t, err, api.CodeUnavailable)
	if !strings.Contains(ae.Message, "version 9") {
		t.Fatalf("version mismatch message: %q", ae.Message)
	}
	<-done
}

// A server with role tokens tells its Authorizer which token each
// connection proved (the cluster token by ClusterTokenName); a call the
// Authorizer refuses is answered with its error and runs no handler,
// synchronous or asynchronous; an allowed one runs, and the Authorizer's
// done gets its outcome.
func TestAuthorizerSeesTheProvenTokenAndRefuses(t *testing.T) {
	var ran atomic.Int64
	type verdict struct {
		token, method string
		outcome       error
	}
	verdicts := make(chan verdict, 16)
	authorize := func(c *Caller, method string) (func(error), error) {
		if c.Token != "op" && method != "Echo" {
			return nil, api.Errorf(api.CodePermissionDenied, "%s needs op, caller has %q", method, c.Token)
		}
		token := c.Token
		return func(err error) { verdicts <- verdict{token, method, err} }, nil
	}
	ts := startServer(t, ServerConfig{Token: "cluster secret", RoleTokens: []NamedToken{{Name: "op", Token: "op secret"}, {Name: "cl", Token: "client secret"}}, Authorize: authorize}, func(s *Server) {
		s.Handle("Count", func(ctx context.Context, req *Request) (any, error) {
			ran.Add(1)
			return nil, nil
		})
		s.HandleAsync("CountAsync", func(req *Request, reply Reply) {
			ran.Add(1)
			reply(nil, nil)
		})
	})
	for _, token := range []string{"client secret", "cluster secret"} {
		c := dial(t, ts.addr, ClientConfig{Token: token})
		for _, m := range []string{"Count", "CountAsync"} {
			if err := c.Call(context.Background(), m, nil, nil); api.CodeOf(err) != api.CodePermissionDenied {
				t.Fatalf("%s with %q: %v, want PERMISSION_DENIED", m, token, err)
			}
		}
		mustEcho(t, c, 7)
		if v := <-verdicts; v.method != "Echo" || v.outcome != nil || (v.token != "cl" && v.token != ClusterTokenName) {
			t.Fatalf("echo with %q: verdict %+v", token, v)
		}
	}
	if ran.Load() != 0 {
		t.Fatalf("refused calls ran %d handlers", ran.Load())
	}
	c := dial(t, ts.addr, ClientConfig{Token: "op secret"})
	for _, m := range []string{"Count", "CountAsync"} {
		if err := c.Call(context.Background(), m, nil, nil); err != nil {
			t.Fatalf("%s with the op token: %v", m, err)
		}
		if v := <-verdicts; v.token != "op" || v.method != m || v.outcome != nil {
			t.Fatalf("%s: verdict %+v", m, v)
		}
	}
	if ran.Load() != 2 {
		t.Fatalf("allowed calls ran %d handlers, want 2", ran.Load())
	}
	if _, err := Dial(context.Background(), ts.addr, ClientConfig{Token: "nobody's"}); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("an unknown token: %v", err)
	}
	if got := ts.Methods(); !slices.Equal(got, []string{"Count", "CountAsync", "Echo"}) {
		t.Fatalf("Methods() = %v", got)
	}
}
