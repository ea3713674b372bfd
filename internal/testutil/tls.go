package testutil

// The certificates here are for tests: ECDSA P-256, valid for an hour,
// with 127.0.0.1, ::1 and localhost as subject alternative names and both
// server and client usage, so one certificate serves a node's listeners
// and its dialers (IssueMaster adds the master names the Raft port
// requires, IssueRole the role name the RPC listeners decide calls by;
// IssueClient makes a client-only one without either). The signing itself
// is tlsconf.Authority's, which `sexton tls` uses too.

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sexton/internal/tlsconf"
)

// validity is how long a test certificate is valid.
const validity = time.Hour

// CA is a certificate authority whose PEM bundle is at CAFile.
type CA struct {
	Dir    string
	CAFile string
	auth   *tlsconf.Authority
	serial int // numbers the files of the certificates issued
}

// NewCA makes a CA named name and writes its certificate to dir/name-ca.pem.
func NewCA(dir, name string) (*CA, error) {
	auth, err := tlsconf.NewAuthority(name+" test CA", validity)
	if err != nil {
		return nil, err
	}
	ca := &CA{Dir: dir, CAFile: filepath.Join(dir, name+"-ca.pem"), auth: auth, serial: 1}
	if err := os.WriteFile(ca.CAFile, tlsconf.CertPEM(auth.Cert.Raw), 0o600); err != nil {
		return nil, err
	}
	return ca, nil
}

// Issue makes a certificate for name signed by the CA and returns the
// files of a node that uses it (its CA is this CA).
func (ca *CA) Issue(name string) (tlsconf.Files, error) {
	return ca.issue(name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, nil)
}

// IssueMaster is Issue for a master: the certificate also names it as
// the master of each of the Raft server ids (tlsconf.MasterURI), which
// the Raft port requires.
func (ca *CA) IssueMaster(name string, ids ...string) (tlsconf.Files, error) {
	var uris []*url.URL
	for _, id := range ids {
		uris = append(uris, tlsconf.MasterURI(id))
	}
	return ca.issue(name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, uris)
}

// IssueClient is Issue for a client only: client usage, no master id and
// no role name (the RPC listeners refuse every call of such a caller).
func (ca *CA) IssueClient(name string) (tlsconf.Files, error) {
	return ca.issue(name, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
}

// IssueRole is Issue for a caller of role (tlsconf.RoleClient,
// RoleHolder or RoleOperator): the certificate carries the URI
// sexton://<role>/<name> the RPC and data listeners decide its calls by.
// It has both usages, so a holder's serves its data listener too.
func (ca *CA) IssueRole(role, name string) (tlsconf.Files, error) {
	return ca.issue(name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, []*url.URL{tlsconf.RoleURI(role, name)})
}

func (ca *CA) issue(name string, usage []x509.ExtKeyUsage, uris []*url.URL) (tlsconf.Files, error) {
	der, key, err := ca.auth.Issue(tlsconf.Leaf{
		CommonName: name,
		DNSNames:   []string{"localhost", name},
		IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		URIs:       uris,
		Usage:      usage,
		Validity:   validity,
	})
	if err != nil {
		return tlsconf.Files{}, err
	}
	keyPEM, err := tlsconf.KeyPEM(key)
	if err != nil {
		return tlsconf.Files{}, err
	}
	ca.serial++
	f := tlsconf.Files{
		Cert: filepath.Join(ca.Dir, fmt.Sprintf("%s-%d.pem", name, ca.serial)),
		Key:  filepath.Join(ca.Dir, fmt.Sprintf("%s-%d-key.pem", name, ca.serial)),
		CA:   ca.CAFile,
	}
	if err := os.WriteFile(f.Cert, tlsconf.CertPEM(der), 0o600); err != nil {
		return tlsconf.Files{}, err
	}
	if err := os.WriteFile(f.Key, keyPEM, 0o600); err != nil {
		return tlsconf.Files{}, err
	}
	return f, nil
}

// NewCAs makes the two CAs most TLS tests need in a temporary directory:
// ca, the cluster's, and other, a stranger's whose certificates the
// cluster must refuse.
func NewCAs(t testing.TB) (ca, other *CA) {
	t.Helper()
	dir := t.TempDir()
	var err error
	if ca, err = NewCA(dir, "cluster"); err != nil {
		t.Fatal(err)
	}
	if other, err = NewCA(dir, "other"); err != nil {
		t.Fatal(err)
	}
	return ca, other
}

// Source is the TLS source of a caller of role (tlsconf.RoleClient,
// RoleHolder or RoleOperator) named name, with a certificate of ca that
// carries its role URI (IssueRole). An empty role issues one without a
// role URI (Issue), which the RPC listeners refuse every call of: for
// the Raft port and the transport's own tests.
func (ca *CA) Source(t testing.TB, role, name string) *tlsconf.Source {
	t.Helper()
	issue := func() (tlsconf.Files, error) { return ca.IssueRole(role, name) }
	if role == "" {
		issue = func() (tlsconf.Files, error) { return ca.Issue(name) }
	}
	f, err := issue()
	if err != nil {
		t.Fatal(err)
	}
	return LoadTLS(t, f)
}

// MasterSource is master id's TLS source with a certificate of ca that
// names it as that master.
func (ca *CA) MasterSource(t testing.TB, id string) *tlsconf.Source {
	t.Helper()
	f, err := ca.IssueMaster(id, id)
	if err != nil {
		t.Fatal(err)
	}
	return LoadTLS(t, f)
}

// Pool is a certificate pool holding ca alone: what a client that
// verifies servers but has no certificate of its own trusts.
func (ca *CA) Pool(t testing.TB) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", ca.CAFile)
	}
	return pool
}

// ReadCert parses the first certificate of the PEM file at path, failing
// the test if there is none.
func ReadCert(t testing.TB, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// LoadTLS loads the TLS source of files, failing the test if it cannot.
func LoadTLS(t testing.TB, f tlsconf.Files) *tlsconf.Source {
	t.Helper()
	s, err := tlsconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// NewTestCA is NewCA in a temporary directory, failing the test if it
// cannot make the CA.
func NewTestCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := NewCA(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// OverwriteTLSFiles writes the certificate, key and CA of from over the
// files of to, as an operator rolls a node onto new material in place
// (a Reload picks it up).
func OverwriteTLSFiles(t testing.TB, to, from tlsconf.Files) {
	t.Helper()
	for _, p := range [][2]string{{from.Cert, to.Cert}, {from.Key, to.Key}, {from.CA, to.CA}} {
		b, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
