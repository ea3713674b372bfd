package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
)

func handshake(t *testing.T, srv, cli *tls.Config) error {
	t.Helper()
	ln, done := testutil.AcceptOnce(t, func(c net.Conn) error {
		tc := tls.Server(c, srv)
		err := tc.Handshake()
		if err == nil {
			_, err = tc.Write([]byte("x"))
		}
		return err
	})
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err != nil {
		<-done
		return err
	}
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		<-done
		return err
	}
	return <-done
}

func TestMutualTLSAndForeignCA(t *testing.T) {
	ca, other := testutil.NewCAs(t)
	srv, cli, bad := ca.Source(t, "", "server"), ca.Source(t, "", "client"), other.Source(t, "", "intruder")

	if err := handshake(t, srv.ServerConfig(tlsconf.RequireClientCert), cli.ClientConfig()); err != nil {
		t.Fatalf("same CA refused: %v", err)
	}
	if err := handshake(t, srv.ServerConfig(tlsconf.RequireClientCert), bad.ClientConfig()); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	// Optional client certs: no certificate is fine, a foreign one is not.
	plain := &tls.Config{RootCAs: nil, InsecureSkipVerify: true}
	if err := handshake(t, srv.ServerConfig(tlsconf.VerifyClientCertIfGiven), plain); err != nil {
		t.Fatalf("client without certificate refused on an optional listener: %v", err)
	}
	if err := handshake(t, srv.ServerConfig(tlsconf.VerifyClientCertIfGiven), bad.ClientConfig()); err == nil {
		t.Fatal("a foreign client certificate was accepted on an optional listener")
	}
	// The client refuses a server of another CA.
	if err := handshake(t, bad.ServerConfig(tlsconf.VerifyClientCertIfGiven), cli.ClientConfig()); err == nil {
		t.Fatal("client accepted a server certificate from another CA")
	}
}

func TestReloadSwapsMaterialAndKeepsOldOnError(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testutil.NewCA(dir, "a")
	next, _ := testutil.NewCA(dir, "n")
	fs, _ := ca.Issue("server")
	fc, _ := ca.Issue("client")
	srv, cli := testutil.LoadTLS(t, fs), testutil.LoadTLS(t, fc)

	// Roll the server onto the new CA by rewriting its files in place.
	nf, _ := next.Issue("server")
	testutil.OverwriteTLSFiles(t, fs, nf)
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, srv.ServerConfig(tlsconf.RequireClientCert), cli.ClientConfig()); err == nil {
		t.Fatal("after reload onto a new CA the old client was still accepted")
	}
	// A broken file: reload fails and the previous material stays.
	if err := os.WriteFile(fs.Key, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(); err == nil {
		t.Fatal("reload of a garbage key succeeded")
	}
	nc, _ := next.Issue("client")
	if err := handshake(t, srv.ServerConfig(tlsconf.RequireClientCert), testutil.LoadTLS(t, nc).ClientConfig()); err != nil {
		t.Fatalf("a failed reload took the working material away: %v", err)
	}
}

func TestLoadRefusesPartialSet(t *testing.T) {
	if _, err := tlsconf.Load(tlsconf.Files{Cert: "x"}); err != tlsconf.ErrIncomplete {
		t.Fatalf("got %v", err)
	}
	if s, err := tlsconf.Load(tlsconf.Files{}); s != nil || err != nil {
		t.Fatalf("empty files: %v %v", s, err)
	}
}

// TestLoadCAPool: a bundle's certificates verify what its CA issued; a
// missing file or one with no PEM certificate is refused, naming it.
func TestLoadCAPool(t *testing.T) {
	dir := t.TempDir()
	ca, _ := testutil.NewCA(dir, "a")
	files, _ := ca.Issue("server")
	pool, err := tlsconf.LoadCAPool(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Fatalf("a certificate the CA issued does not verify against its bundle: %v", err)
	}

	if _, err := tlsconf.LoadCAPool(filepath.Join(dir, "absent.pem")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing bundle: %v", err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsconf.LoadCAPool(garbage); err == nil || !strings.Contains(err.Error(), garbage+" holds no PEM certificate") {
		t.Fatalf("bundle without a certificate: %v", err)
	}
}
