package authz

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"strings"
	"testing"

	"sexton/api"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

var testTable = Table{
	"Read":  {Client},
	"Mount": {Holder},
	"Fix":   {Holder, Operator},
	"Wipe":  {Operator},
}

func cert(cn string, uris ...string) *x509.Certificate {
	c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	for _, u := range uris {
		p, err := url.Parse(u)
		if err != nil {
			panic(err)
		}
		c.URIs = append(c.URIs, p)
	}
	return c
}

// Each kind of caller gets the methods its roles allow, and nothing else:
// certificate names (a master's as an operator's, several as their
// union, malformed ones ignored), tokens by name, the anonymous caller
// of a TLS listener as a client, and everyone on an open listener; a
// method without a row is refused to all of them.
func TestGuardDecisions(t *testing.T) {
	withTLS := &Guard{Table: testTable, TLS: true, Tokens: true}
	cases := []struct {
		name    string
		g       *Guard
		c       transport.Caller
		allowed string // methods allowed, in table order Read Mount Fix Wipe
	}{
		{"client cert", withTLS, transport.Caller{Cert: cert("a", "sexton://client/a")}, "Read"},
		{"holder cert", withTLS, transport.Caller{Cert: cert("h", "sexton://holder/h")}, "Mount Fix"},
		{"operator cert", withTLS, transport.Caller{Cert: cert("o", "sexton://operator/o")}, "Read Fix Wipe"},
		{"master cert", withTLS, transport.Caller{Cert: cert("m", tlsconf.MasterURI("m1").String())}, "Read Fix Wipe"},
		{"client and holder cert", withTLS, transport.Caller{Cert: cert("x", "sexton://client/x", "sexton://holder/x")}, "Read Mount Fix"},
		{"malformed names only", withTLS, transport.Caller{Cert: cert("y", "sexton://client/", "sexton://client/a/b", "https://client/a", "sexton://root/y")}, ""},
		{"cert beats token", withTLS, transport.Caller{Cert: cert("a", "sexton://client/a"), Token: OperatorToken}, "Read"},
		{"client token", withTLS, transport.Caller{Token: ClientToken}, "Read"},
		{"holder token", withTLS, transport.Caller{Token: HolderToken}, "Mount Fix"},
		{"operator token", withTLS, transport.Caller{Token: OperatorToken}, "Read Fix Wipe"},
		{"cluster token", withTLS, transport.Caller{Token: transport.ClusterTokenName}, "Read Mount Fix Wipe"},
		{"unknown token name", withTLS, transport.Caller{Token: "guest"}, ""},
		{"no proof where tokens are required", withTLS, transport.Caller{}, ""},
		{"anonymous on TLS", &Guard{Table: testTable, TLS: true}, transport.Caller{}, "Read"},
		{"open listener", &Guard{Table: testTable}, transport.Caller{}, "Read Mount Fix Wipe"},
	}
	for _, tc := range cases {
		var got []string
		for _, m := range []string{"Read", "Mount", "Fix", "Wipe", "Unlisted"} {
			c := tc.c
			_, err := tc.g.Allowed(&c, m)
			switch {
			case err == nil:
				got = append(got, m)
			case err.Code != api.CodePermissionDenied || !strings.Contains(err.Message, m):
				t.Errorf("%s: %s refused with %v", tc.name, m, err)
			}
		}
		if strings.Join(got, " ") != tc.allowed {
			t.Errorf("%s: allowed %q, want %q", tc.name, strings.Join(got, " "), tc.allowed)
		}
	}
}

// Two roles with one token are refused, naming both flags; the cluster
// token may double as the operator's.
func TestRoleTokensMustDiffer(t *testing.T) {
	if _, err := RoleTokens("c", "x", "x", ""); err == nil || !strings.Contains(err.Error(), "--client-token and --holder-token") {
		t.Fatalf("client = holder token: %v", err)
	}
	if _, err := RoleTokens("x", "x", "", ""); err == nil || !strings.Contains(err.Error(), "--cluster-token and --client-token") {
		t.Fatalf("cluster = client token: %v", err)
	}
	ts, err := RoleTokens("x", "c", "", "x")
	if err != nil || len(ts) != 2 || ts[0].Name != ClientToken || ts[1].Name != OperatorToken {
		t.Fatalf("cluster = operator token: %v %+v", err, ts)
	}
}

// Authorize audits a call the caller may make only as an operator, and
// every refusal; a client's method, or a holder's method called by a
// caller that is also a holder, is not audited.
func TestAuthorizeAudits(t *testing.T) {
	var lines []string
	g := &Guard{Table: testTable, Tokens: true, Count: func(method, role, outcome string) {
		lines = append(lines, method+" "+role+" "+outcome)
	}}
	for _, tc := range []struct {
		token, method string
		audited       bool
	}{
		{OperatorToken, "Read", false},
		{OperatorToken, "Fix", true},
		{OperatorToken, "Wipe", true},
		{HolderToken, "Fix", false},
		{transport.ClusterTokenName, "Fix", false},
		{transport.ClusterTokenName, "Wipe", true},
		{ClientToken, "Read", false},
	} {
		done, err := g.Authorize(&transport.Caller{Token: tc.token}, tc.method)
		if err != nil {
			t.Fatalf("%s by %s refused: %v", tc.method, tc.token, err)
		}
		if (done != nil) != tc.audited {
			t.Errorf("%s by %s: audited %v, want %v", tc.method, tc.token, done != nil, tc.audited)
		}
		if done != nil {
			done(nil)
		}
	}
	if _, err := g.Authorize(&transport.Caller{Token: ClientToken}, "Wipe"); err == nil {
		t.Fatal("a client wiped")
	}
	want := []string{"Fix operator ok", "Wipe operator ok", "Wipe operator+holder ok", "Wipe client PERMISSION_DENIED"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audited:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// Role token flags are lists: every token listed is a NamedToken of its
// role, the cluster token's after the first too (the first is the
// server's own Token), and a token shared by two roles' lists is refused.
func TestRoleTokenLists(t *testing.T) {
	ts, err := RoleTokens("m1,m2", "a1,a2", "h", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tok := range ts {
		got = append(got, tok.Name+"="+tok.Token)
	}
	if want := "cluster=m2 client=a1 client=a2 holder=h"; strings.Join(got, " ") != want {
		t.Fatalf("RoleTokens = %q, want %q", strings.Join(got, " "), want)
	}
	if HasRoleTokens(ts[:1]) || !HasRoleTokens(ts) {
		t.Fatal("HasRoleTokens counts the further cluster tokens as role tokens")
	}
	if _, err := RoleTokens("m", "a1,a2", "h,a2", ""); err == nil || !strings.Contains(err.Error(), "--client-token and --holder-token") {
		t.Fatalf("a token in two roles' lists: %v", err)
	}
}
