package holder

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
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
	masterTLS := ca.Source(t, "master").ServerConfig(tlsconf.RequireClientCert)
	go func() { _ = m.srv.Serve(tls.NewListener(ln, masterTLS)) }()

	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	svc, err := StartService(s, ServiceConfig{Masters: []string{ln.Addr().String()}, ListenAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond,
		TLS: ca.Source(t, "holder"), TLSRequireClientCert: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(m.mountsSeen()) > 0 }, "a mount over TLS")

	status := func(cfg *tls.Config) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := transport.Dial(ctx, svc.Addr(), transport.ClientConfig{TLS: cfg})
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Call(ctx, api.MethodHolderStatus, &api.Empty{}, &api.HolderStatusResponse{})
	}
	if err := status(ca.Source(t, "client").ClientConfig()); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	}
	if err := status(&tls.Config{RootCAs: ca.Pool(t)}); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("client without a certificate on a listener that requires one: %v", err)
	}
	if err := status(other.Source(t, "intruder").ClientConfig()); api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("client of another CA: %v", err)
	}
	if err := svc.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if err := status(ca.Source(t, "client2").ClientConfig()); err != nil {
		t.Fatalf("after a reload: %v", err)
	}
}
