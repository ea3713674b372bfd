package holder

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
	"sexton/transport/transporttest"
)

// With TLS the holder mounts through a master listener that requires a
// client certificate (it presents its own), and its data listener with
// TLSRequireClientCert serves a client with a certificate of the CA and
// refuses one without, or with another CA's.
func TestHolderTLSBothWays(t *testing.T) {
	ca, other := testutil.NewCAs(t)
	m := startFakeMaster(t, grant.NewKey())
	close(m.hold)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	masterTLS := ca.Source(t, tlsconf.RoleMaster, "master").ServerConfig(tlsconf.RequireClientCert)
	go func() { _ = m.srv.Serve(tls.NewListener(ln, masterTLS)) }()

	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	svc, err := StartService(s, ServiceConfig{Masters: []string{ln.Addr().String()}, ListenAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond,
		TLS: ca.Source(t, tlsconf.RoleHolder, "holder"), TLSRequireClientCert: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(m.mountsSeen()) > 0 }, "a mount over TLS")

	status := func(cfg *tls.Config) error {
		return transporttest.Call(svc.Addr(), transport.ClientConfig{TLS: cfg}, api.MethodHolderStatus, &api.Empty{}, &api.HolderStatusResponse{})
	}
	if err := status(ca.Source(t, tlsconf.RoleClient, "client").ClientConfig()); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	}
	if err := status(&tls.Config{RootCAs: ca.Pool(t)}); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("client without a certificate on a listener that requires one: %v", err)
	}
	if err := status(other.Source(t, tlsconf.RoleClient, "intruder").ClientConfig()); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("client of another CA: %v", err)
	}
	if err := svc.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if err := status(ca.Source(t, tlsconf.RoleClient, "client2").ClientConfig()); err != nil {
		t.Fatalf("after a reload: %v", err)
	}
}

// A TLS holder serves /metrics, /healthz and /readyz over HTTPS with its
// certificate, to a scraper without a client certificate even where the
// data listener requires one, and refuses plain HTTP.
func TestHolderHTTPIsHTTPSWithTLS(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testutil.NewCA(dir, "cluster")
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	// No master answers: the HTTP port serves from the start.
	svc, err := StartService(s, ServiceConfig{Masters: []string{"127.0.0.1:1"}, ListenAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond,
		TLS: ca.Source(t, tlsconf.RoleHolder, "holder"), TLSRequireClientCert: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	pem, err := os.ReadFile(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://" + svc.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics over HTTPS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "sexton_holder_") {
		t.Fatalf("GET /metrics over HTTPS: %s\n%.300s", resp.Status, body)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + svc.HTTPAddr() + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP /metrics answered %s", resp.Status)
		}
	}
}
