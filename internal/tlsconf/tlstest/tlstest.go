// Package tlstest makes throwaway certificate authorities and node
// certificates for tests: ECDSA P-256, valid for an hour, with 127.0.0.1,
// ::1 and localhost as subject alternative names and both server and client
// usage, so one certificate serves a node's listeners and its dialers
// (IssueMaster adds the master names the Raft port requires, IssueRole the
// role name the RPC listeners decide calls by; IssueClient makes a
// client-only one without either). The signing itself is
// tlsconf.Authority's, which `sexton tls` uses too.
package tlstest

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
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
