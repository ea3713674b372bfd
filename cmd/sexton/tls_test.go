package main

import (
	"errors"
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
