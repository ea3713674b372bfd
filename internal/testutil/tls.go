package testutil

// The certificates here are for tests: ECDSA P-256, valid for an hour,
// with 127.0.0.1, ::1 and localhost as subject alternative names and both
// server and client usage, so one certificate serves a node's listeners
// and its dialers (IssueMaster adds the master names the Raft port
// requires; IssueClient makes a client-only one).

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sexton/internal/tlsconf"
)

// CA is a certificate authority whose PEM bundle is at CAFile.
type CA struct {
	Dir    string
	CAFile string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

// NewCA makes a CA named name and writes its certificate to dir/name-ca.pem.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Dir: dir, CAFile: filepath.Join(dir, name+"-ca.pem"), cert: cert, key: key, serial: 1}
	if err := writePEM(ca.CAFile, "CERTIFICATE", der); err != nil {
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

// IssueClient is Issue for a client only: client usage, no master id.
func (ca *CA) IssueClient(name string) (tlsconf.Files, error) {
	return ca.issue(name, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
}

func (ca *CA) issue(name string, usage []x509.ExtKeyUsage, uris []*url.URL) (tlsconf.Files, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tlsconf.Files{}, err
	}
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     []string{"localhost", name},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		URIs:         uris,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tlsconf.Files{}, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tlsconf.Files{}, err
	}
	f := tlsconf.Files{
		Cert: filepath.Join(ca.Dir, fmt.Sprintf("%s-%d.pem", name, ca.serial)),
		Key:  filepath.Join(ca.Dir, fmt.Sprintf("%s-%d-key.pem", name, ca.serial)),
		CA:   ca.CAFile,
	}
	if err := writePEM(f.Cert, "CERTIFICATE", der); err != nil {
		return tlsconf.Files{}, err
	}
	if err := writePEM(f.Key, "EC PRIVATE KEY", kder); err != nil {
		return tlsconf.Files{}, err
	}
	return f, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
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

// Source is the TLS source of a node (a holder or a client) with a
// certificate of ca for name.
func (ca *CA) Source(t testing.TB, name string) *tlsconf.Source {
	t.Helper()
	f, err := ca.Issue(name)
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
