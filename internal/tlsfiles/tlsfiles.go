package tlsfiles

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"sexton/internal/tlsconf"
)

// The CA's files in its directory, and how long a CA is valid.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
	CAValidity = 10 * 365 * 24 * time.Hour
)

// certName is what a certificate's name may be: it becomes a file name
// and the last part of the URI sexton://<role>/<name>.
var certName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// ValidName says whether name may name a certificate: letters, digits,
// '.', '_' or '-', starting with a letter or digit, at most 63.
func ValidName(name string) bool { return certName.MatchString(name) }

// roles are the roles certificates are issued for. Masters and holders
// present their certificate on the connections they accept and on those
// they dial, so they need both usages; clients and operators only dial.
var roles = map[string][]x509.ExtKeyUsage{
	tlsconf.RoleMaster:   {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	tlsconf.RoleHolder:   {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	tlsconf.RoleClient:   {x509.ExtKeyUsageClientAuth},
	tlsconf.RoleOperator: {x509.ExtKeyUsageClientAuth},
}

// KnownRole says whether role is one certificates are issued for.
func KnownRole(role string) bool { _, ok := roles[role]; return ok }

// Serves says whether a certificate of role is presented by a listener:
// it must then name every host and address the node is dialed by.
func Serves(role string) bool {
	return slices.Contains(roles[role], x509.ExtKeyUsageServerAuth)
}

// WriteCA makes a CA named cn and writes dir/ca.crt and dir/ca.key,
// creating dir (0700) if it is missing.
func WriteCA(dir, cn string) (*tlsconf.Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := refuseExisting(certPath, keyPath); err != nil {
		return nil, err
	}
	ca, err := tlsconf.NewAuthority(cn, CAValidity)
	if err != nil {
		return nil, err
	}
	keyPEM, err := tlsconf.KeyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	return ca, writeNew(keyPath, keyPEM, certPath, tlsconf.CertPEM(ca.Cert.Raw))
}

// LoadCA reads the CA WriteCA wrote into dir.
func LoadCA(dir string) (*tlsconf.Authority, error) {
	return tlsconf.LoadAuthority(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
}

// Cert is a certificate to issue.
type Cert struct {
	Role, Name string // a known role and a valid name
	DNS        []string
	IPs        []net.IP
	Validity   time.Duration
}

// Paths are the files of c in dir.
func (c Cert) Paths(dir string) (certPath, keyPath string) {
	base := filepath.Join(dir, c.Role+"-"+c.Name)
	return base + ".crt", base + ".key"
}

// URI is the identity the certificate names.
func (c Cert) URI() *url.URL { return tlsconf.RoleURI(c.Role, c.Name) }

// WriteCert issues c from ca and writes its certificate and key into dir
// (Paths).
func WriteCert(ca *tlsconf.Authority, dir string, c Cert) error {
	usage, ok := roles[c.Role]
	if !ok {
		return fmt.Errorf("role %q: want master, holder, client or operator", c.Role)
	}
	if !ValidName(c.Name) {
		return fmt.Errorf("name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit, at most 63", c.Name)
	}
	certPath, keyPath := c.Paths(dir)
	if err := refuseExisting(certPath, keyPath); err != nil {
		return err
	}
	der, key, err := ca.Issue(tlsconf.Leaf{
		CommonName: c.Role + "/" + c.Name,
		DNSNames:   c.DNS,
		IPs:        c.IPs,
		URIs:       []*url.URL{c.URI()},
		Usage:      usage,
		Validity:   c.Validity,
	})
	if err != nil {
		return err
	}
	keyPEM, err := tlsconf.KeyPEM(key)
	if err != nil {
		return err
	}
	return writeNew(keyPath, keyPEM, certPath, tlsconf.CertPEM(der))
}

// refuseExisting fails if any of paths exists.
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
