// Command certgen makes throwaway certificates for the Python client's
// TLS tests (clients/python/tests), which cannot make them with Python's
// standard library. Each argument CA/ROLE/NAME asks for a certificate
// named NAME from the CA named CA (created in DIR/CA on first use) for
// ROLE:
//
//	master  server and client usage, URI SAN sexton://master/NAME
//	holder  server and client usage, URI SAN sexton://holder/NAME
//	client  client usage only, URI SAN sexton://client/NAME
//
// every one with 127.0.0.1, ::1 and localhost as names, valid for an hour,
// signed by tlsconf.Authority as the Go tests' internal/testutil does (a
// command may not import that test support). It prints a JSON object from each argument
// to its files: {"cert": ..., "key": ..., "ca": ...}.
//
//	certgen DIR CA/ROLE/NAME...
package main

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sexton/internal/tlsconf"
)

// validity is how long a certificate is valid.
const validity = time.Hour

// authority is a CA whose certificate is at caFile; n numbers the files
// of the certificates it issues.
type authority struct {
	dir, caFile string
	auth        *tlsconf.Authority
	n           int
}

func newAuthority(dir, name string) (*authority, error) {
	auth, err := tlsconf.NewAuthority(name+" test CA", validity)
	if err != nil {
		return nil, err
	}
	a := &authority{dir: dir, caFile: filepath.Join(dir, name+"-ca.pem"), auth: auth}
	return a, os.WriteFile(a.caFile, tlsconf.CertPEM(auth.Cert.Raw), 0o600)
}

// issue makes a certificate for name with uri as its URI name, with
// client usage only when clientOnly.
func (a *authority) issue(name string, clientOnly bool, uri *url.URL) (tlsconf.Files, error) {
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if clientOnly {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, key, err := a.auth.Issue(tlsconf.Leaf{
		CommonName: name,
		DNSNames:   []string{"localhost", name},
		IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		URIs:       []*url.URL{uri},
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
	a.n++
	f := tlsconf.Files{
		Cert: filepath.Join(a.dir, fmt.Sprintf("%s-%d.pem", name, a.n)),
		Key:  filepath.Join(a.dir, fmt.Sprintf("%s-%d-key.pem", name, a.n)),
		CA:   a.caFile,
	}
	if err := os.WriteFile(f.Cert, tlsconf.CertPEM(der), 0o600); err != nil {
		return tlsconf.Files{}, err
	}
	return f, os.WriteFile(f.Key, keyPEM, 0o600)
}

type files struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	CA   string `json:"ca"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "certgen:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: certgen DIR CA/ROLE/NAME [CA/ROLE/NAME ...]")
	}
	dir := args[0]
	cas := map[string]*authority{}
	out := map[string]files{}
	for _, spec := range args[1:] {
		parts := strings.Split(spec, "/")
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			return fmt.Errorf("%q: want CA/ROLE/NAME", spec)
		}
		caName, role, name := parts[0], parts[1], parts[2]
		ca := cas[caName]
		if ca == nil {
			sub := filepath.Join(dir, caName)
			if err := os.MkdirAll(sub, 0o700); err != nil {
				return err
			}
			var err error
			if ca, err = newAuthority(sub, caName); err != nil {
				return err
			}
			cas[caName] = ca
		}
		var (
			f   tlsconf.Files
			err error
		)
		uri := &url.URL{Scheme: "sexton", Host: role, Path: "/" + name}
		switch role {
		case "master":
			f, err = ca.issue(name, false, tlsconf.MasterURI(name))
		case "holder":
			f, err = ca.issue(name, false, uri)
		case "client", "operator":
			f, err = ca.issue(name, true, uri)
		default:
			return fmt.Errorf("%q: role %q: want master, holder, client or operator", spec, role)
		}
		if err != nil {
			return err
		}
		out[spec] = files{Cert: f.Cert, Key: f.Key, CA: f.CA}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
