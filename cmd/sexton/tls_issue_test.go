package main

import (
	"crypto/x509"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/internal/tlsfiles"
)

// sexton tls ca and tls cert: a P-256 CA, certificates with the role's
// URI and usages that chain to it and load as a node's files, keys of
// mode 0600, and no file ever overwritten.
func TestTLSHelperIssues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if err := run([]string{"tls", "ca", "--dir", dir}); err != nil {
		t.Fatal(err)
	}
	ca := testutil.ReadCert(t, filepath.Join(dir, "ca.crt"))
	if !ca.IsCA || ca.PublicKeyAlgorithm != x509.ECDSA || ca.NotAfter.Sub(ca.NotBefore) < tlsfiles.CAValidity {
		t.Fatalf("CA: IsCA %v, %v, valid %v", ca.IsCA, ca.PublicKeyAlgorithm, ca.NotAfter.Sub(ca.NotBefore))
	}
	if err := run([]string{"tls", "ca", "--dir", dir}); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Fatalf("second tls ca: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, tc := range []struct {
		role, name string
		extra      []string
		usage      []x509.ExtKeyUsage
	}{
		{"master", "m1", []string{"--ip", "127.0.0.1", "--dns", "localhost,m1.example"}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{"holder", "h1", []string{"--ip", "127.0.0.1"}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{"client", "app", nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"operator", "alice", []string{"--days", "30"}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		args := append([]string{"tls", "cert", "--dir", dir, "--role", tc.role, "--name", tc.name}, tc.extra...)
		if err := run(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		base := filepath.Join(dir, tc.role+"-"+tc.name)
		c := testutil.ReadCert(t, base+".crt")
		if !slices.Equal(c.ExtKeyUsage, tc.usage) {
			t.Errorf("%s: usages %v, want %v", tc.role, c.ExtKeyUsage, tc.usage)
		}
		if len(c.URIs) != 1 || c.URIs[0].String() != "sexton://"+tc.role+"/"+tc.name {
			t.Errorf("%s: URIs %v", tc.role, c.URIs)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s: does not chain to the CA: %v", tc.role, err)
		}
		if st, err := os.Stat(base + ".key"); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: key mode %v, %v", tc.role, st.Mode(), err)
		}
		if _, err := tlsconf.Load(tlsconf.Files{Cert: base + ".crt", Key: base + ".key", CA: filepath.Join(dir, "ca.crt")}); err != nil {
			t.Errorf("%s: files do not load: %v", tc.role, err)
		}
		if tc.role == "master" {
			if ids := tlsconf.MasterIDs(c); !slices.Equal(ids, []string{"m1"}) || !slices.Contains(c.DNSNames, "m1.example") {
				t.Errorf("master: ids %v, DNS %v", ids, c.DNSNames)
			}
		}
		if err := run(args); err == nil || !strings.Contains(err.Error(), "not overwriting") {
			t.Errorf("%s issued twice: %v", tc.role, err)
		}
	}
	for _, args := range [][]string{
		{"--role", "holder", "--name", "h2"},                    // a server without names
		{"--role", "admin", "--name", "x"},                      // unknown role
		{"--role", "client", "--name", "../x"},                  // not a name
		{"--role", "client", "--name", "x", "--ip", "nonsense"}, // not an IP
	} {
		err := run(append([]string{"tls", "cert", "--dir", dir}, args...))
		var ue usageError
		if err == nil {
			t.Errorf("%v: accepted", args)
		} else if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// operator token generate prints one token of 32 random bytes and nothing
// else.
func TestTokenGenerate(t *testing.T) {
	out, err := captureStdout(t, func() error { return run([]string{"operator", "token", "generate"}) })
	if err != nil {
		t.Fatal(err)
	}
	tok, ok := strings.CutSuffix(string(out), "\n")
	raw, derr := base64.RawURLEncoding.DecodeString(tok)
	if !ok || strings.Contains(tok, "\n") || derr != nil || len(raw) != 32 {
		t.Fatalf("output %q: %d bytes, %v", out, len(raw), derr)
	}
}
