package transport

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"sexton/api"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
)

type tlsFixture struct {
	ca, other *testutil.CA
	server    *tlsconf.Source
	client    *tlsconf.Source
	foreign   *tlsconf.Source
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	f := &tlsFixture{}
	f.ca, f.other = testutil.NewCAs(t)
	f.server, f.client, f.foreign = f.ca.Source(t, "", "server"), f.ca.Source(t, "", "client"), f.other.Source(t, "", "intruder")
	return f
}

// caOnly is a client that verifies the server but has no certificate.
func (f *tlsFixture) caOnly(t *testing.T) *tls.Config {
	return &tls.Config{RootCAs: f.ca.Pool(t), MinVersion: tls.VersionTLS12}
}

// Mutual TLS with a token inside: calls work, many concurrent calls on one
// connection (batched writes) arrive intact, and the connection really is
// TLS (a plain client gets no hello and gives up).
func TestTLSMutualWithToken(t *testing.T) {
	f := newTLSFixture(t)
	ts := startServer(t, ServerConfig{Token: "tok", TLS: f.server.ServerConfig(tlsconf.RequireClientCert)}, nil)
	c := dial(t, ts.addr, ClientConfig{Token: "tok", TLS: f.client.ClientConfig()})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			var resp echoResp
			pad := strings.Repeat("x", i*97)
			if err := c.Call(context.Background(), "Echo", &echoReq{N: i, Pad: pad}, &resp); err != nil || resp.N != i || resp.Pad != pad {
				t.Errorf("call %d: %v (n=%d, %d bytes)", i, err, resp.N, len(resp.Pad))
			}
		})
	}
	wg.Wait()

	// The token is still checked inside TLS.
	_, err := Dial(context.Background(), ts.addr, ClientConfig{Token: "wrong", TLS: f.client.ClientConfig()})
	requireCode(t, err, api.CodeUnauthenticated)

	_, err = Dial(context.Background(), ts.addr, ClientConfig{Token: "tok"})
	ae := requireCode(t, err, api.CodeUnauthenticated)
	if !strings.Contains(ae.Message, PortSpeaksTLS) {
		t.Fatalf("plain client against a TLS server: %q", ae.Message)
	}
}

// A plain client on a TLS port fails in well under a second (not after
// the handshake timeout) with an error that says the port speaks TLS and
// what to give; the refusal is counted; a TLS client that is slow to send
// its ClientHello is still served, and so are TLS clients afterwards.
func TestPlainClientOnTLSPortFailsFast(t *testing.T) {
	f := newTLSFixture(t)
	for _, auth := range []tlsconf.ClientAuth{tlsconf.RequireClientCert, tlsconf.VerifyClientCertIfGiven} {
		ts := startServer(t, ServerConfig{TLS: f.server.ServerConfig(auth)}, nil)
		start := time.Now()
		_, err := Dial(context.Background(), ts.addr, ClientConfig{})
		took := time.Since(start)
		ae := requireCode(t, err, api.CodeUnauthenticated)
		if took > time.Second || !strings.Contains(ae.Message, ts.addr+": "+PortSpeaksTLS) || !strings.Contains(ae.Message, "--tls-ca") {
			t.Fatalf("plain client on a TLS port: after %v: %q", took, ae.Message)
		}
		// The server counts the refusal after the client has it.
		for i := 0; ts.Stats().Refused != 1; i++ {
			if i == 250 {
				t.Fatalf("refused %d connections, want 1", ts.Stats().Refused)
			}
			time.Sleep(20 * time.Millisecond)
		}

		// A TLS client that waits 100 ms before its ClientHello.
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		cfg := f.client.ClientConfigFor(ts.addr)
		tc := tls.Client(nc, cfg)
		if err := tc.Handshake(); err != nil {
			t.Fatalf("a TLS client 100 ms slow to start: %v", err)
		}
		tc.Close()
		mustEcho(t, dial(t, ts.addr, ClientConfig{TLS: f.client.ClientConfig()}), 1)
	}
}

// Certificates are checked both ways: a foreign or missing client
// certificate is refused where one is required, a missing one is fine
// where it is optional but a foreign one is not, and a client refuses a
// server of another CA. Every refusal is UNAUTHENTICATED.
func TestTLSRefusesForeignCertificates(t *testing.T) {
	f := newTLSFixture(t)
	req := startServer(t, ServerConfig{TLS: f.server.ServerConfig(tlsconf.RequireClientCert)}, nil)
	opt := startServer(t, ServerConfig{TLS: f.server.ServerConfig(tlsconf.VerifyClientCertIfGiven)}, nil)
	intruder := startServer(t, ServerConfig{TLS: f.foreign.ServerConfig(tlsconf.VerifyClientCertIfGiven)}, nil)

	for name, tc := range map[string]struct {
		addr string
		cfg  *tls.Config
	}{
		"foreign cert, required":   {req.addr, f.foreign.ClientConfig()},
		"no cert, required":        {req.addr, f.caOnly(t)},
		"foreign cert, optional":   {opt.addr, f.foreign.ClientConfig()},
		"server of another CA":     {intruder.addr, f.client.ClientConfig()},
		"no cert, another CA srv.": {intruder.addr, f.caOnly(t)},
	} {
		c, err := Dial(context.Background(), tc.addr, ClientConfig{TLS: tc.cfg})
		if err == nil {
			mustEcho(t, c, 1)
			c.Close()
			t.Fatalf("%s: accepted", name)
		}
		requireCode(t, err, api.CodeUnauthenticated)
	}
	mustEcho(t, dial(t, opt.addr, ClientConfig{TLS: f.caOnly(t)}), 2)
	mustEcho(t, dial(t, opt.addr, ClientConfig{TLS: f.client.ClientConfig()}), 3)
	if n := req.Stats().Refused; n != 2 {
		t.Fatalf("required listener refused %d connections, want 2", n)
	}
}

// A TLS client against a plain server fails at once, saying so; the
// server logs why it dropped the connection.
func TestTLSClientAgainstPlainServer(t *testing.T) {
	f := newTLSFixture(t)
	var logs strings.Builder
	var mu sync.Mutex
	ts := startServer(t, ServerConfig{Logger: hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{mu: &mu, w: &logs}})}, nil)
	start := time.Now()
	_, err := Dial(context.Background(), ts.addr, ClientConfig{TLS: f.client.ClientConfig()})
	ae := requireCode(t, err, api.CodeUnauthenticated)
	if !strings.Contains(ae.Message, PortIsPlain) || time.Since(start) > time.Second {
		t.Fatalf("after %v: %q", time.Since(start), ae.Message)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		if strings.Contains(got, "a TLS client on this plain port") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not log the TLS client: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// After the server reloads onto another CA, an established connection
// keeps serving and a new handshake uses the new material.
func TestTLSReloadKeepsConnections(t *testing.T) {
	f := newTLSFixture(t)
	files := f.server.Files()
	ts := startServer(t, ServerConfig{TLS: f.server.ServerConfig(tlsconf.RequireClientCert)}, nil)
	old := dial(t, ts.addr, ClientConfig{TLS: f.client.ClientConfig()})
	mustEcho(t, old, 1)

	next, err := f.other.Issue("server")
	if err != nil {
		t.Fatal(err)
	}
	testutil.OverwriteTLSFiles(t, files, next)
	if err := f.server.Reload(); err != nil {
		t.Fatal(err)
	}
	mustEcho(t, old, 2)
	_, err = Dial(context.Background(), ts.addr, ClientConfig{TLS: f.client.ClientConfig()})
	requireCode(t, err, api.CodeUnauthenticated)
	mustEcho(t, dial(t, ts.addr, ClientConfig{TLS: f.foreign.ClientConfig()}), 3)
}

// Close does not wait for a connection stuck in its TLS handshake (a
// client that connected and said nothing).
func TestTLSCloseDuringHandshake(t *testing.T) {
	f := newTLSFixture(t)
	ts := startServer(t, ServerConfig{TLS: f.server.ServerConfig(tlsconf.RequireClientCert)}, nil)
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for ts.Stats().Connections == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	ts.stop()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v with a connection in its TLS handshake", d)
	}
}
