// Package tlstest makes throwaway certificate authorities and node
// certificates for tests: ECDSA P-256, valid for an hour, with 127.0.0.1,
// ::1 and localhost as subject alternative names and both server and client
// usage, so one certificate serves a node's listeners and its dialers
// (IssueMaster adds the master names the Raft port requires, IssueRole the
// role name the RPC listeners decide calls by; IssueClient makes a
// client-only one without either).
package tlstest

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
