package master

import (
	"crypto/tls"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
	"sexton/transport/transporttest"
)

// tlsNode starts a one-node cluster whose RPC and HTTP listeners use a
// certificate of ca.
func tlsNode(t *testing.T, ca *testutil.CA, opts ...func(*Config)) (*testCluster, *tlsconf.Source) {
	t.Helper()
	files, err := ca.IssueMaster("master", "m1")
	if err != nil {
		t.Fatal(err)
	}
	src, err := tlsconf.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	tc := startCluster(t, 1, append([]func(*Config){func(c *Config) {
		c.TLS = src
		c.HTTPAddr = freeAddr(t)
	}}, opts...)...)
	return tc, src
}

func httpsClient(t *testing.T, ca *testutil.CA) *http.Client {
	t.Helper()
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(t)}, DisableKeepAlives: true}}
}

// plainHTTP keeps no idle connections (goleak checks at exit).
var plainHTTP = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// statusVia calls Status on addr as cfg's caller; a refusal at the dial is
// returned like the call's.
func statusVia(addr string, cfg transport.ClientConfig) error {
	return transporttest.Call(addr, cfg, api.MethodStatus, &api.Empty{}, &api.StatusResponse{})
}

// With TLS the RPC listener serves TLS clients with or without a
// certificate of the CA (optional by default) and refuses a foreign one;
// the HTTP listener is HTTPS; a reload is counted by result in /metrics.
func TestMasterTLSListeners(t *testing.T) {
	ca, other := testutil.NewCAs(t)
	tc, src := tlsNode(t, ca)
	n := tc.node(0)

	client := ca.Source(t, tlsconf.RoleClient, "client")
	if err := statusVia(n.RPCAddr(), transport.ClientConfig{TLS: client.ClientConfig()}); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	if err := statusVia(n.RPCAddr(), transport.ClientConfig{TLS: &tls.Config{RootCAs: ca.Pool(t)}}); err != nil {
		t.Fatalf("client without a certificate on the optional listener: %v", err)
	}
	if err := statusVia(n.RPCAddr(), transport.ClientConfig{TLS: other.Source(t, tlsconf.RoleClient, "x").ClientConfig()}); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("client of another CA: %v", err)
	}
	if err := statusVia(n.RPCAddr(), transport.ClientConfig{HandshakeTimeout: 300 * time.Millisecond}); err == nil {
		t.Fatal("plain client served by a TLS listener")
	}

	hc := httpsClient(t, ca)
	base := "https://" + n.HTTPAddr()
	if code, _ := testutil.HTTPGet(t, hc, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz over TLS: %d", code)
	}
	// Go's TLS server answers a plain request with a 400; what matters
	// is that nothing is served in the clear.
	if code, _ := testutil.HTTPGet(t, plainHTTP, "http://"+n.HTTPAddr()+"/healthz"); code == 200 {
		t.Fatal("/healthz served in plain HTTP on the TLS listener")
	}

	if err := n.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src.Files().Key, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.ReloadTLS(); err == nil {
		t.Fatal("reload of a garbage key succeeded")
	}
	_, metrics := testutil.HTTPGet(t, hc, base+"/metrics")
	for _, want := range []string{`sexton_tls_reloads_total{result="ok"} 1`, `sexton_tls_reloads_total{result="error"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
	// The failed reload kept the working material.
	if err := statusVia(n.RPCAddr(), transport.ClientConfig{TLS: client.ClientConfig()}); err != nil {
		t.Fatalf("after a failed reload: %v", err)
	}
}

// --tls-client-auth=require: a client without a certificate is refused.
func TestMasterTLSRequireClientCert(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster")
	tc, _ := tlsNode(t, ca, func(c *Config) { c.TLSRequireClientCert = true })
	addr := tc.node(0).RPCAddr()
	pool := ca.Pool(t)
	if err := statusVia(addr, transport.ClientConfig{TLS: &tls.Config{RootCAs: pool}}); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("client without a certificate: %v", err)
	}
	if err := statusVia(addr, transport.ClientConfig{TLS: ca.Source(t, tlsconf.RoleClient, "holder").ClientConfig()}); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
}

// /debug/pprof/ is served only with EnableDebug; /metrics, /healthz and
// /readyz are served either way.
func TestMasterDebugEndpointsOffByDefault(t *testing.T) {
	for _, debug := range []bool{false, true} {
		tc := startCluster(t, 1, func(c *Config) { c.HTTPAddr = freeAddr(t); c.EnableDebug = debug })
		base := "http://" + tc.node(0).HTTPAddr()
		want := http.StatusNotFound
		if debug {
			want = http.StatusOK
		}
		if code, _ := testutil.HTTPGet(t, plainHTTP, base+"/debug/pprof/"); code != want {
			t.Fatalf("EnableDebug=%v: /debug/pprof/ answered %d, want %d", debug, code, want)
		}
		for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
			if code, _ := testutil.HTTPGet(t, plainHTTP, base+p); code != 200 {
				t.Fatalf("EnableDebug=%v: %s answered %d", debug, p, code)
			}
		}
	}
}
