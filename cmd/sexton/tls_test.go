package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"sexton/internal/testutil"
)

// The master's TLS flags fail closed: a partial set, an unknown
// --tls-client-auth, or require without TLS are usage errors naming the
// flag; a complete set loads.
func TestMasterTLSFlags(t *testing.T) {
	ca := testutil.NewTestCA(t, "c")
	f, err := ca.Issue("m")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", f.Cert}, "--tls-cert, --tls-key and --tls-ca must be given together"},
		{[]string{"--tls-client-auth", "maybe"}, `--tls-client-auth "maybe"`},
		{[]string{"--tls-client-auth", "require"}, "--tls-client-auth=require needs"},
	} {
		_, parse := masterFlags("master")
		err := parse(tc.args)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	cfg, parse := masterFlags("master")
	if err := parse([]string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA, "--tls-client-auth", "require", "--enable-debug"}); err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || !cfg.TLSRequireClientCert || !cfg.EnableDebug {
		t.Fatalf("flags not applied: TLS %v, require %v, debug %v", cfg.TLS != nil, cfg.TLSRequireClientCert, cfg.EnableDebug)
	}
}

// testToken is a cluster token secret.CheckToken accepts.
const testToken = "test-cluster-token-0123456789abcdef"

// A master with TLS that authenticates no client (optional client
// certificates, no token) refuses to start, naming the three ways out;
// each of them starts it, the insecure one with a warning; a weak token is
// refused; a master with neither TLS nor token starts with a warning.
func TestMasterRefusesUnauthenticatedTLS(t *testing.T) {
	ca, err := testutil.NewCA(t.TempDir(), "c")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ca.IssueMaster("m", "m1")
	if err != nil {
		t.Fatal(err)
	}
	tlsOn := []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}
	_, parse := masterFlags("master")
	err = parse(tlsOn)
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("TLS, optional client certificates, no token: %v, want a usage error", err)
	}
	for _, want := range []string{"--tls-client-auth require", "--cluster-token", "--insecure-tls-no-client-auth", "sexton operator token generate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}
	for _, tc := range []struct {
		args []string
		warn string // "" for none
	}{
		{append(tlsOn, "--tls-client-auth", "require"), ""},
		{append(tlsOn, "--cluster-token", testToken), ""},
		{append(tlsOn, "--insecure-tls-no-client-auth"), "--insecure-tls-no-client-auth"},
		{nil, "open to anyone"},
		{[]string{"--cluster-token", testToken}, ""},
	} {
		opts, parse := masterFlags("master")
		if err := parse(tc.args); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if (tc.warn == "") != (opts.SecurityWarning == "") || !strings.Contains(opts.SecurityWarning, tc.warn) {
			t.Errorf("%v: warning %q, want one with %q", tc.args, opts.SecurityWarning, tc.warn)
		}
	}
	t.Setenv("SEXTON_INSECURE_TLS_NO_CLIENT_AUTH", "true")
	if _, parse := masterFlags("master"); parse(tlsOn) != nil {
		t.Errorf("SEXTON_INSECURE_TLS_NO_CLIENT_AUTH=true not honoured")
	}
	_, parse = masterFlags("master")
	if err := parse([]string{"--cluster-token", "s3cret"}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--cluster-token is 6 bytes") {
		t.Errorf("a 6-byte token: %v", err)
	}
}

// A client may give --tls-ca alone (no certificate); a certificate
// without its key is refused.
func TestClientTLSFlags(t *testing.T) {
	ca := testutil.NewTestCA(t, "c")
	f, _ := ca.Issue("cli")
	if c, err := (&tlsFlags{ca: f.CA}).clientConfig(); err != nil || c == nil || c.RootCAs == nil {
		t.Fatalf("--tls-ca alone: %v %v", c, err)
	}
	if c, err := (&tlsFlags{}).clientConfig(); err != nil || c != nil {
		t.Fatalf("no flags: %v %v", c, err)
	}
	if _, err := (&tlsFlags{cert: f.Cert, ca: f.CA}).clientConfig(); err == nil {
		t.Fatal("--tls-cert without --tls-key accepted")
	}
	if c, err := (&tlsFlags{cert: f.Cert, key: f.Key, ca: f.CA}).clientConfig(); err != nil || c.GetClientCertificate == nil {
		t.Fatalf("full set: %v", err)
	}
}

// A holder refuses TLS that authenticates no client and a weak token
// before it opens its directory.
func TestHolderRefusesUnauthenticatedTLS(t *testing.T) {
	ca, err := testutil.NewCA(t.TempDir(), "c")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ca.Issue("h")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err = runHolder([]string{"--dir", dir, "--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA})
	if err == nil || !strings.Contains(err.Error(), "holder data port") || !strings.Contains(err.Error(), "--insecure-tls-no-client-auth") {
		t.Fatalf("TLS, optional client certificates, no token: %v", err)
	}
	if err := runHolder([]string{"--dir", dir, "--cluster-token", "short"}); err == nil || !strings.Contains(err.Error(), "--cluster-token is 5 bytes") {
		t.Fatalf("a 5-byte token: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the holder wrote its directory before refusing: %v", ents)
	}
}
