package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// Files names the PEM files of one node. All empty means TLS is off; a
// partial set is refused by Load.
type Files struct {
	Cert string // this node's certificate chain
	Key  string // its private key
	CA   string // the CA bundle peers, holders and (optional) clients are verified against
}

// Enabled reports whether any file is named.
func (f Files) Enabled() bool { return f.Cert != "" || f.Key != "" || f.CA != "" }

// ErrIncomplete is returned by Load when only some of the files are named.
var ErrIncomplete = errors.New("tlsconf: --tls-cert, --tls-key and --tls-ca must be given together")

type material struct {
	cert *tls.Certificate
	pool *x509.CertPool
}

// Source holds the current material and counts reloads.
type Source struct {
	files   Files
	mu      sync.Mutex // serialises Reload
	cur     atomic.Pointer[material]
	reloads atomic.Uint64
}

// Load reads the files. It returns (nil, nil) when f names none: callers
// treat a nil *Source as "TLS off".
func Load(f Files) (*Source, error) {
	if !f.Enabled() {
		return nil, nil
	}
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, ErrIncomplete
	}
	s := &Source{files: f}
	m, err := read(f)
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	return s, nil
}

func read(f Files) (*material, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: certificate %s with key %s: %w", f.Cert, f.Key, err)
	}
	pool, err := LoadCAPool(f.CA)
	if err != nil {
		return nil, err
	}
	return &material{cert: &cert, pool: pool}, nil
}

// LoadCAPool reads a PEM CA bundle; a file with no certificate in it is
// an error.
func LoadCAPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsconf: CA bundle %s holds no PEM certificate", path)
	}
	return pool, nil
}

// Reload re-reads the files. On error the previous material stays in use.
func (s *Source) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := read(s.files)
	if err != nil {
		return err
	}
	s.cur.Store(m)
	s.reloads.Add(1)
	return nil
}

// Reloads is how many reloads succeeded.
func (s *Source) Reloads() uint64 { return s.reloads.Load() }

// Files returns the file names this source reads.
func (s *Source) Files() Files { return s.files }

// ClientAuth says what a listener asks of the connecting side.
type ClientAuth int

const (
	// RequireClientCert: peers and holders (Raft, holder↔master). A
	// connection without a certificate signed by the CA is refused.
	RequireClientCert ClientAuth = iota
	// VerifyClientCertIfGiven: client-facing listeners. A certificate is
	// optional, but one that is presented must chain to the CA.
	VerifyClientCertIfGiven
)

// ServerConfig is the config for a listener. Every handshake uses the
// material current at that moment.
func (s *Source) ServerConfig(auth ClientAuth) *tls.Config {
	ca := tls.RequireAndVerifyClientCert
	if auth == VerifyClientCertIfGiven {
		ca = tls.VerifyClientCertIfGiven
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*m.cert},
				ClientCAs:    m.pool,
				ClientAuth:   ca,
			}, nil
		},
	}
}

// ListenerConfig is the config of a listener that clients reach as well
// as peers: a client certificate is optional unless requireClientCert. It
// is nil (no TLS) when s is nil.
func (s *Source) ListenerConfig(requireClientCert bool) *tls.Config {
	if s == nil {
		return nil
	}
	auth := VerifyClientCertIfGiven
	if requireClientCert {
		auth = RequireClientCert
	}
	return s.ServerConfig(auth)
}

// ClientConfig is the config for dialing a server. It always presents this
// node's certificate (servers that do not ask ignore it) and verifies the
// server's chain against the current CA and its name against the host
// dialed (an IP address is checked against the certificate's IP SANs).
func (s *Source) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is done in VerifyConnection against the pool
		// current at handshake time; the static RootCAs path cannot be
		// reloaded.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(s.cur.Load().pool, cs)
		},
	}
}

// ClientConfigFor is ClientConfig with the server name set to host (the
// host part of addr), for dialers that do not go through tls.Dial with the
// address (which sets it itself).
func (s *Source) ClientConfigFor(addr string) *tls.Config {
	c := s.ClientConfig()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c.ServerName = host
	return c
}

func verifyServer(pool *x509.CertPool, cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsconf: server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots:         pool,
		Intermediates: inter,
		DNSName:       cs.ServerName,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tlsconf: server certificate: %w", err)
	}
	return nil
}
