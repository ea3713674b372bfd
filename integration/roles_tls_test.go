package integration

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
)

// roleCerts are the callers of a mutual-TLS cluster, each with its own
// certificate: the files of a client, an operator and a holder, and the
// CA alone (a caller without a certificate).
type roleCerts struct {
	client, operator, holder tlsconf.Files
	caOnly                   string
}

// checkRoles runs the CLI as each caller and checks that every role does
// what it may and nothing else: the client puts, gets, lists, stats and
// removes and is refused an operator method; the operator saves a
// snapshot and reads the settings and the Raft peers; a holder's
// certificate may neither put nor get; a caller without a certificate is
// refused at the TLS handshake.
func checkRoles(t *testing.T, c *cluster, phase string, rc roleCerts) {
	t.Helper()
	dir := t.TempDir()
	masters := []string{"--masters", strings.Join(c.addrs(), ","), "--timeout", "20s"}
	as := func(f tlsconf.Files, args ...string) []string {
		return append(append(args, masters...), tlsArgs(f)...)
	}
	key := "roles/" + strings.ReplaceAll(phase, " ", "-")
	value := filepath.Join(dir, "value")
	if err := os.WriteFile(value, []byte("v-"+phase), 0o600); err != nil {
		t.Fatal(err)
	}

	runCLI(t, as(rc.client, "put", key, value, "--replicas", "2")...)
	if out := runCLI(t, as(rc.client, "get", key)...); out != "v-"+phase {
		t.Fatalf("%s: client get: %q", phase, out)
	}
	if out := runCLI(t, as(rc.client, "ls", "roles/")...); !strings.Contains(out, key) {
		t.Fatalf("%s: client ls lacks %s:\n%s", phase, key, out)
	}
	runCLI(t, as(rc.client, "stat", key)...)
	snap := filepath.Join(dir, "snap")
	out, err := runCLIErr(as(rc.client, "operator", "snapshot", "save", snap)...)
	if err == nil || !strings.Contains(out, "PERMISSION_DENIED") || !strings.Contains(out, "SnapshotSave needs role operator; this caller is client") {
		t.Fatalf("%s: snapshot save with the client certificate: %v\n%s", phase, err, out)
	}
	if _, err := os.Stat(snap); err == nil {
		t.Fatalf("%s: a refused snapshot save wrote a file", phase)
	}

	runCLI(t, as(rc.operator, "operator", "snapshot", "save", snap)...)
	if fi, err := os.Stat(snap); err != nil || fi.Size() == 0 {
		t.Fatalf("%s: snapshot save with the operator certificate: %v", phase, err)
	}
	runCLI(t, as(rc.operator, "operator", "settings")...)
	if out := runCLI(t, as(rc.operator, "operator", "raft", "list-peers")...); !strings.Contains(out, "m1") {
		t.Fatalf("%s: raft list-peers:\n%s", phase, out)
	}

	for _, args := range [][]string{{"get", key}, {"put", key + "-h", value}} {
		out, err := runCLIErr(as(rc.holder, args...)...)
		if err == nil || !strings.Contains(out, "PERMISSION_DENIED") || !strings.Contains(out, "this caller is holder") {
			t.Fatalf("%s: %s with a holder certificate: %v\n%s", phase, args[0], err, out)
		}
	}

	out, err = runCLIErr(append([]string{"get", key, "--tls-ca", rc.caOnly}, masters...)...)
	if err == nil || !strings.Contains(out, "UNAUTHENTICATED") || strings.Contains(out, "v-"+phase) {
		t.Fatalf("%s: get without a client certificate: %v\n%s", phase, err, out)
	}

	runCLI(t, as(rc.client, "rm", key)...)
	if out, err := runCLIErr(as(rc.client, "get", key)...); err == nil || !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("%s: get after rm: %v\n%s", phase, err, out)
	}
}

// reloads is how many TLS reloads a node has logged.
func reloads(p *proc) int { return strings.Count(p.logText(), "TLS material reloaded") }

// issuerCN is the issuer of the certificate addr presents, seen by a
// client trusting every CA in caFile.
func issuerCN(t *testing.T, addr string, f tlsconf.Files) string {
	t.Helper()
	cfg := clientTLS(t, f).Clone()
	cfg.ServerName = "127.0.0.1"
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Issuer.CommonName
}

// A mutual-TLS cluster with roles, end to end through the binaries: three
// masters and two holders requiring client certificates, and a client,
// an operator and a holder certificate each doing what its role may and
// nothing else (checkRoles). The same holds after the leader is
// SIGKILLed (the new leader enforces the same roles) and after a
// certificate reload to a new CA: every node's --tls-ca becomes a bundle
// of the old and the new CA, the masters' certificate is replaced by one
// of the new CA, and SIGHUP makes them serve it (a new connection sees the
// new issuer); callers with certificates of the new CA then have their
// roles, those of the old CA keep theirs, and a certificate reissued for
// the client's name with the operator role is an operator.
func TestMutualTLSRolesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ca, err := testutil.NewCA(dir, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	c, master := startMutualTLSCluster(t, ca)
	h1 := c.startHolder(t, "h1", "default")
	h2 := c.startHolder(t, "h2", "default")
	first := roleCerts{
		client:   issueRole(t, ca, tlsconf.RoleClient, "app"),
		operator: issueRole(t, ca, tlsconf.RoleOperator, "ops"),
		holder:   issueRole(t, ca, tlsconf.RoleHolder, "hx"),
		caOnly:   ca.CAFile,
	}
	checkRoles(t, c, "start", first)

	// The leader dies without a word; the new one enforces the same.
	victim := c.leader()
	victim.kill()
	c.waitLeader(30 * time.Second)
	checkRoles(t, c, "after leader SIGKILL", first)
	victim.start()
	// Up and serving before the SIGHUPs below (a process that has not
	// yet installed its handler dies of one).
	testutil.WaitFor(t, 30*time.Second, func() bool {
		_, err := c.status(victim)
		return err == nil
	}, "the killed master back")

	// Reload to a new CA. First every node trusts both (the CA file they
	// all read becomes a bundle), then the masters present a certificate
	// of the new CA.
	next, err := testutil.NewCA(dir, "next")
	if err != nil {
		t.Fatal(err)
	}
	oldPEM, err := os.ReadFile(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	newPEM, err := os.ReadFile(next.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle.pem")
	if err := os.WriteFile(bundle, bytes.Join([][]byte{oldPEM, newPEM}, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := []*proc{h1.proc, h2.proc}
	for _, m := range c.nodes {
		nodes = append(nodes, m.proc)
	}
	var lagging *proc
	defer func() {
		if t.Failed() && lagging != nil {
			t.Logf("---- %s, which did not reload ----\n%s", lagging.name, tail(lagging.logText(), 3000))
		}
	}()
	hup := func(ps []*proc, want int, what string) {
		t.Helper()
		for _, p := range ps {
			_ = p.cmd.Process.Signal(syscall.SIGHUP)
		}
		testutil.WaitFor(t, 10*time.Second, func() bool {
			for _, p := range ps {
				if reloads(p) < want {
					lagging = p
					return false
				}
			}
			return true
		}, what)
	}
	copyFile(t, bundle, ca.CAFile)
	hup(nodes, 1, "every node reloads the CA bundle")
	nextMaster, err := next.IssueMaster("master", "m1", "m2", "m3")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, nextMaster.Cert, master.Cert)
	copyFile(t, nextMaster.Key, master.Key)
	var masters []*proc
	for _, m := range c.nodes {
		masters = append(masters, m.proc)
	}
	hup(masters, 2, "the masters reload their certificate")
	viaBundle := tlsconf.Files{Cert: first.client.Cert, Key: first.client.Key, CA: ca.CAFile}
	for _, m := range c.nodes {
		if got := issuerCN(t, m.rpcAddr, viaBundle); got != issuerOf(t, next.CAFile) {
			t.Fatalf("%s serves a certificate issued by %q after the reload, want the new CA's %q", m.id, got, issuerOf(t, next.CAFile))
		}
	}
	// The harness's own connections trust the bundle from now on.
	c.tlsClient = clientTLS(t, master)

	// Callers of the new CA, with the bundle as their CA file.
	withBundle := func(f tlsconf.Files) tlsconf.Files { f.CA = ca.CAFile; return f }
	second := roleCerts{
		client:   withBundle(issueRole(t, next, tlsconf.RoleClient, "app2")),
		operator: withBundle(issueRole(t, next, tlsconf.RoleOperator, "ops2")),
		holder:   withBundle(issueRole(t, next, tlsconf.RoleHolder, "hx2")),
		caOnly:   ca.CAFile,
	}
	checkRoles(t, c, "after reload, new CA", second)
	checkRoles(t, c, "after reload, old CA", roleCerts{client: withBundle(first.client), operator: withBundle(first.operator), holder: withBundle(first.holder), caOnly: ca.CAFile})
	// The client's name reissued with the operator role is an operator.
	promoted := withBundle(issueRole(t, next, tlsconf.RoleOperator, "app"))
	snap := filepath.Join(dir, "promoted.snap")
	runCLI(t, append([]string{"operator", "snapshot", "save", snap, "--masters", strings.Join(c.addrs(), ",")}, tlsArgs(promoted)...)...)
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("snapshot save with the reissued operator certificate: %v", err)
	}
}

// issuerOf is the subject CN of the (first) CA certificate in caFile.
func issuerOf(t *testing.T, caFile string) string {
	t.Helper()
	return testutil.ReadCert(t, caFile).Subject.CommonName
}
