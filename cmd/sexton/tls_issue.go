package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"sexton/internal/secret"
	"sexton/internal/tlsconf"
	"sexton/jsonout"
)

// The CA files `sexton tls ca` writes into --dir and `sexton tls cert`
// signs with.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
	caValidity = 10 * 365 * 24 * time.Hour
)

// certName is what a certificate's --name may be: it becomes a file name
// and the last part of the URI sexton://<role>/<name>.
var certName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// certRoles are the roles `sexton tls cert` issues for. Masters and
// holders present their certificate on the connections they accept and on
// those they dial, so they need both usages; clients and operators only
// dial.
var certRoles = map[string][]x509.ExtKeyUsage{
	tlsconf.RoleMaster:   {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	tlsconf.RoleHolder:   {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	tlsconf.RoleClient:   {x509.ExtKeyUsageClientAuth},
	tlsconf.RoleOperator: {x509.ExtKeyUsageClientAuth},
}

func setupTLSCA(fs *flag.FlagSet) runFunc {
	dir := fs.String("dir", "", "directory for "+caCertFile+" and "+caKeyFile+" (created if missing; existing files are never overwritten)")
	cn := fs.String("cn", "sexton cluster CA", "the CA's common name")
	return func(_ *env, _ []string) error {
		if *dir == "" {
			return usagef("tls ca: --dir is required")
		}
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			return err
		}
		certPath, keyPath := filepath.Join(*dir, caCertFile), filepath.Join(*dir, caKeyFile)
		if err := refuseExisting(certPath, keyPath); err != nil {
			return err
		}
		ca, err := tlsconf.NewAuthority(*cn, caValidity)
		if err != nil {
			return err
		}
		keyPEM, err := tlsconf.KeyPEM(ca.Key)
		if err != nil {
			return err
		}
		if err := writeNew(keyPath, keyPEM, certPath, tlsconf.CertPEM(ca.Cert.Raw)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "sexton tls ca: %s and %s (key mode 0600), valid until %s; give %s as --tls-ca to every node and client, keep %s off the nodes\n",
			certPath, keyPath, ca.Cert.NotAfter.UTC().Format(time.DateOnly), certPath, keyPath)
		return nil
	}
}

func setupTLSCert(fs *flag.FlagSet) runFunc {
	dir := fs.String("dir", "", "directory holding "+caCertFile+" and "+caKeyFile+" (sexton tls ca); the certificate and key are written there")
	role := fs.String("role", "", "master, holder, client or operator: the certificate names it as the URI sexton://ROLE/NAME")
	name := fs.String("name", "", "the node's or client's name: a master's --id, a holder's --client-id, a client's or operator's own name")
	dns := fs.String("dns", "", "host names A,B,... others dial this node by (a master's or holder's; at least one of --dns, --ip)")
	ips := fs.String("ip", "", "IP addresses A,B,... others dial this node by")
	days := fs.Int("days", 825, "days the certificate is valid (not beyond the CA)")
	return func(_ *env, _ []string) error {
		if *dir == "" {
			return usagef("tls cert: --dir is required")
		}
		usage, ok := certRoles[*role]
		if !ok {
			return usagef("tls cert: --role %q: want master, holder, client or operator", *role)
		}
		if !certName.MatchString(*name) {
			return usagef("tls cert: --name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit, at most 63", *name)
		}
		if *days <= 0 {
			return usagef("tls cert: --days %d: want a positive number", *days)
		}
		var addrs []net.IP
		for _, s := range splitList(*ips) {
			ip := net.ParseIP(s)
			if ip == nil {
				return usagef("tls cert: --ip %q is not an IP address", s)
			}
			addrs = append(addrs, ip)
		}
		hosts := splitList(*dns)
		server := slices.Contains(usage, x509.ExtKeyUsageServerAuth)
		if server && len(hosts) == 0 && len(addrs) == 0 {
			return usagef("tls cert: a %s's certificate must name every host and address it is dialed by: give --dns, --ip or both (a holder's --advertise host; a master's --rpc-addr and --raft-addr hosts)", *role)
		}
		ca, err := tlsconf.LoadAuthority(filepath.Join(*dir, caCertFile), filepath.Join(*dir, caKeyFile))
		if err != nil {
			return fmt.Errorf("tls cert: the CA in %s (make one with sexton tls ca): %w", *dir, err)
		}
		base := filepath.Join(*dir, *role+"-"+*name)
		certPath, keyPath := base+".crt", base+".key"
		if err := refuseExisting(certPath, keyPath); err != nil {
			return err
		}
		der, key, err := ca.Issue(tlsconf.Leaf{
			CommonName: *role + "/" + *name,
			DNSNames:   hosts,
			IPs:        addrs,
			URIs:       []*url.URL{tlsconf.RoleURI(*role, *name)},
			Usage:      usage,
			Validity:   time.Duration(*days) * 24 * time.Hour,
		})
		if err != nil {
			return err
		}
		keyPEM, err := tlsconf.KeyPEM(key)
		if err != nil {
			return err
		}
		if err := writeNew(keyPath, keyPEM, certPath, tlsconf.CertPEM(der)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "sexton tls cert: %s and %s (key mode 0600) for %s, valid until %s\n",
			certPath, keyPath, tlsconf.RoleURI(*role, *name), time.Now().Add(time.Duration(*days)*24*time.Hour).UTC().Format(time.DateOnly))
		return nil
	}
}

// refuseExisting fails if any of paths exists: issuing never replaces a
// key or certificate in use.
func refuseExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: not overwriting it (move it away to issue a new one)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writeNew writes the key (mode 0600) and then the certificate, each
// only if it does not exist yet; on failure it removes what it wrote.
func writeNew(keyPath string, keyPEM []byte, certPath string, certPEM []byte) error {
	if err := writeExclusive(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	if err := writeExclusive(certPath, certPEM, 0o644); err != nil {
		os.Remove(keyPath)
		return err
	}
	return nil
}

func writeExclusive(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists: not overwriting it (move it away to issue a new one)", path)
		}
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func setupTokenGenerate(*flag.FlagSet) runFunc {
	return func(e *env, _ []string) error {
		tok, err := secret.Generate()
		if err != nil {
			return err
		}
		return e.output(jsonout.Token{Token: tok}, func() error {
			_, err := fmt.Println(tok)
			return err
		})
	}
}
