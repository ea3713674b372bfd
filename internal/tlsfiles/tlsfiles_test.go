package tlsfiles

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sexton/internal/tlsconf"
)

// A CA and a holder's certificate: the files load as a node's, the
// certificate names its role, has both usages and chains to the CA, the
// key is 0600, and neither file is ever written over; a role or a name
// outside the rules is refused.
func TestWriteCAAndCert(t *testing.T) {
	dir := t.TempDir()
	ca, err := WriteCA(dir, "test CA")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteCA(dir, "test CA"); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Fatalf("second CA: %v, want a refusal", err)
	}
	loaded, err := LoadCA(dir)
	if err != nil || !loaded.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA: %v", err)
	}
	c := Cert{Role: tlsconf.RoleHolder, Name: "h1", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Validity: time.Hour}
	if err := WriteCert(loaded, dir, c); err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := c.Paths(dir)
	src, err := tlsconf.Load(tlsconf.Files{Cert: certPath, Key: keyPath, CA: filepath.Join(dir, CACertFile)})
	if err != nil {
		t.Fatalf("the files do not load: %v", err)
	}
	tc, err := src.ClientConfig().GetClientCertificate(nil)
	if err != nil || tc.Leaf == nil {
		t.Fatalf("the loaded certificate: %v", err)
	}
	leaf := tc.Leaf
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("does not chain to the CA: %v", err)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != "sexton://holder/h1" ||
		!slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("URIs %v, usages %v", leaf.URIs, leaf.ExtKeyUsage)
	}
	if st, err := os.Stat(keyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, %v", st.Mode(), err)
	}
	if err := WriteCert(loaded, dir, c); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Errorf("issued twice: %v", err)
	}
	for _, bad := range []Cert{{Role: "admin", Name: "x"}, {Role: tlsconf.RoleClient, Name: "../x"}} {
		if err := WriteCert(loaded, dir, bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	if !Serves(tlsconf.RoleMaster) || Serves(tlsconf.RoleOperator) || !KnownRole(tlsconf.RoleClient) || KnownRole("admin") {
		t.Error("the role table: masters serve, operators do not; admin is no role")
	}
}
