package integration

import (
	"crypto/tls"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

func tlsArgs(f tlsconf.Files) []string {
	return []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA}
}

// startMutualTLSCluster starts three masters serving a master certificate
// of ca and requiring client certificates; every holder started on the
// cluster presents a holder certificate of ca and requires them too. It
// returns the cluster and the masters' certificate files.
func startMutualTLSCluster(t *testing.T, ca *testutil.CA) (*cluster, tlsconf.Files) {
	t.Helper()
	master, err := ca.IssueMaster("master", "m1", "m2", "m3")
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 3, append(tlsArgs(master), "--tls-client-auth", "require")...)
	c.holderExtra = func(name string) []string {
		return append(tlsArgs(issueRole(t, ca, tlsconf.RoleHolder, name)), "--tls-client-auth", "require")
	}
	return c, master
}

func issue(t *testing.T, ca *testutil.CA, name string) tlsconf.Files {
	t.Helper()
	f, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// issueRole is issue for a caller of role (a sexton://<role>/<name>
// certificate).
func issueRole(t *testing.T, ca *testutil.CA, role, name string) tlsconf.Files {
	t.Helper()
	f, err := ca.IssueRole(role, name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func clientTLS(t *testing.T, f tlsconf.Files) *tls.Config {
	t.Helper()
	src, err := tlsconf.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return src.ClientConfig()
}

// serverSerial is the serial of the certificate addr presents to a new
// TLS connection.
func serverSerial(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

// Three masters and two holders with mutual TLS everywhere (client
// certificates required on the RPC and data listeners): put, get and rm
// work through the library and the CLI, and across a SIGKILL of the
// leader; a client or a holder with a certificate of another CA is
// refused; a certificate reload on SIGHUP keeps established connections
// serving and gives new connections the new certificate.
// The masters' Raft traffic runs over the same mutual TLS (the Raft stream
// layer), so the failover here is elected and replicated over TLS.
func TestMutualTLSEverywhere(t *testing.T) {
	ca, other := testutil.NewCAs(t)
	dir := t.TempDir()
	c, master := startMutualTLSCluster(t, ca)
	h1 := c.startHolder(t, "h1", "p1")
	c.startHolder(t, "h2", "p1")

	// The library: put two replicas, get, over TLS to masters and holders.
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	c.putGet(t, ctx, "tls/a", "alpha", client.PutOptions{Pool: "p1", Replicas: 2}, "")

	// The CLI with its own certificate: put, get, rm.
	cli := issueRole(t, ca, tlsconf.RoleClient, "cli")
	cliArgs := append([]string{"--masters", strings.Join(c.addrs(), ",")}, tlsArgs(cli)...)
	valueFile := filepath.Join(dir, "value")
	if err := os.WriteFile(valueFile, []byte("bravo"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI(t, append([]string{"put", "tls/b", valueFile, "--replicas", "2"}, cliArgs...)...)
	if out := runCLI(t, append([]string{"get", "tls/b"}, cliArgs...)...); out != "bravo" {
		t.Fatalf("CLI get: %q", out)
	}
	runCLI(t, append([]string{"rm", "tls/b"}, cliArgs...)...)
	if out, err := runCLIErr(append([]string{"get", "tls/b"}, cliArgs...)...); err == nil || !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("get after rm: %v\n%s", err, out)
	}

	// The client's certificate does not make it an operator: a snapshot
	// save is refused with PERMISSION_DENIED, and the refusal is audited
	// on the leader.
	snapFile := filepath.Join(dir, "snap")
	out, err := runCLIErr(append([]string{"operator", "snapshot", "save", snapFile}, cliArgs...)...)
	if err == nil || !strings.Contains(out, "PERMISSION_DENIED") || !strings.Contains(out, "operator") {
		t.Fatalf("snapshot save with a client certificate: %v\n%s", err, out)
	}
	if _, statErr := os.Stat(snapFile); statErr == nil {
		t.Fatal("a refused snapshot save wrote a file")
	}
	testutil.WaitFor(t, 5*time.Second, func() bool {
		for _, m := range c.nodes {
			if strings.Contains(m.logText(), "rpc audit: refused") && strings.Contains(m.logText(), "sexton://client/cli") {
				return true
			}
		}
		return false
	}, "the refusal in a master's audit log")
	// A holder's certificate does not make it a client.
	hcert := issueRole(t, ca, tlsconf.RoleHolder, "hx")
	out, err = runCLIErr(append([]string{"get", "tls/a", "--masters", strings.Join(c.addrs(), ",")}, tlsArgs(hcert)...)...)
	if err == nil || !strings.Contains(out, "PERMISSION_DENIED") {
		t.Fatalf("get with a holder certificate: %v\n%s", err, out)
	}

	// A client of another CA is refused by masters and holders; so is a
	// client without TLS (it gets no hello and gives up).
	intruder := issue(t, other, "intruder")
	out, err = runCLIErr(append([]string{"get", "tls/a", "--timeout", "3s", "--masters", strings.Join(c.addrs(), ",")}, tlsArgs(intruder)...)...)
	if err == nil || !strings.Contains(out, "UNAUTHENTICATED") {
		t.Fatalf("a client of another CA: %v\n%s", err, out)
	}
	for _, addr := range []string{c.nodes[0].rpcAddr, h1.addr} {
		dctx, dcancel := ctxT(5 * time.Second)
		_, err := transport.Dial(dctx, addr, transport.ClientConfig{TLS: testutil.LoadTLS(t, intruder).ClientConfig()})
		dcancel()
		if api.CodeOf(err) != api.CodeUnauthenticated {
			t.Fatalf("%s: a client of another CA: %v", addr, err)
		}
		dctx, dcancel = ctxT(5 * time.Second)
		_, err = transport.Dial(dctx, addr, transport.ClientConfig{HandshakeTimeout: 500 * time.Millisecond})
		dcancel()
		if err == nil {
			t.Fatalf("%s: a plain client was served", addr)
		}
	}

	// A holder with a certificate of another CA never mounts.
	bad := &holderNode{name: "hbad", dir: filepath.Join(dir, "hbad"), addr: freePort(t), pool: "p1"}
	badArgs := []string{"holder", "--masters", strings.Join(c.addrs(), ","), "--dir", bad.dir, "--rpc-addr", bad.addr,
		"--pool", "p1", "--client-id", "hbad", "--capacity", "1GiB", "--log-level", "debug", "--tls-client-auth", "require"}
	bad.proc = startProc(t, "hbad", bad.dir+".log", nil, append(badArgs, tlsArgs(intruder)...)...)
	time.Sleep(3 * time.Second)
	var segs api.ListSegmentsResponse
	if err := c.client(0).Call(ctx, api.MethodListSegments, &api.Empty{}, &segs); err != nil {
		t.Fatal(err)
	}
	if len(segs.Segments) != 2 {
		t.Fatalf("%d segments mounted, want 2 (the foreign holder mounted?): %+v", len(segs.Segments), segs.Segments)
	}
	if log := bad.logText(); !strings.Contains(log, "certificate") {
		t.Fatalf("foreign holder's log does not say why it cannot mount:\n%s", tail(log, 3000))
	}
	bad.kill()

	// Reload: new certificate files from the same CA, SIGHUP. An
	// established connection keeps serving; a new one sees the new
	// certificate; reloads are counted.
	m1 := c.nodes[0]
	established := dialTLS(t, m1.rpcAddr, c.cc())
	before := serverSerial(t, m1.rpcAddr, c.tlsClient)
	next, err := ca.IssueMaster("master", "m1", "m2", "m3")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, next.Cert, master.Cert)
	copyFile(t, next.Key, master.Key)
	for _, m := range c.nodes {
		_ = m.cmd.Process.Signal(syscall.SIGHUP)
	}
	_ = h1.cmd.Process.Signal(syscall.SIGHUP)
	testutil.WaitFor(t, 10*time.Second, func() bool {
		for _, m := range c.nodes {
			if !strings.Contains(m.logText(), "TLS material reloaded") {
				return false
			}
		}
		return strings.Contains(h1.logText(), "TLS material reloaded")
	}, "masters log the reload")
	after := serverSerial(t, m1.rpcAddr, c.tlsClient)
	if before.Cmp(after) == 0 {
		t.Fatalf("after SIGHUP new connections still get certificate serial %v", before)
	}
	var st api.StatusResponse
	if err := established.Call(ctx, api.MethodStatus, &api.Empty{}, &st); err != nil {
		t.Fatalf("connection established before the reload: %v", err)
	}
	if _, err := holderStatusWith(h1.addr, c.cc()); err != nil || !h1.running() {
		t.Fatalf("holder after SIGHUP: running %v, %v", h1.running(), err)
	}
	if _, got := testutil.HTTPGet(t, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tlsClient.Clone(), DisableKeepAlives: true}}, "https://"+m1.httpAddr+"/metrics"); !strings.Contains(got, `sexton_tls_reloads_total{result="ok"} 1`) {
		t.Fatalf("/metrics after one reload:\n%s", grepLines(got, "sexton_tls_reloads_total"))
	}

	// Failover: SIGKILL the leader; a new one serves over TLS.
	victim := c.leader()
	victim.kill()
	c.waitLeader(30 * time.Second)
	c.putGet(t, ctx, "tls/c", "charlie", client.PutOptions{Pool: "p1", Replicas: 2}, " after failover")
	if err := c.lib().Remove(ctx, "tls/a"); err != nil {
		t.Fatalf("rm after failover: %v", err)
	}
	if _, _, err := c.lib().Get(ctx, "tls/a"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get after rm: %v", err)
	}
}

func dialTLS(t *testing.T, addr string, cc transport.ClientConfig) *transport.Conn {
	t.Helper()
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	conn, err := transport.Dial(ctx, addr, cc)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	// Write a new file and rename it over the old one, as a certificate
	// manager would: the node never reads half a file.
	tmp := to + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The certificates of `sexton tls` run a cluster end to end: a CA, a
// master, a holder and a client certificate from the binary; a master and
// a holder requiring client certificates; a put and a get by the CLI with
// the client certificate. A client without TLS is told at once, at the
// master and at the holder, that the port speaks TLS; the holder's
// /metrics is HTTPS for a scraper with the CA alone, and not plain HTTP.
func TestTLSHelperCertificatesRunACluster(t *testing.T) {
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	runCLI(t, "tls", "ca", "--dir", pki)
	runCLI(t, "tls", "cert", "--dir", pki, "--role", "master", "--name", "m1", "--ip", "127.0.0.1", "--dns", "localhost")
	runCLI(t, "tls", "cert", "--dir", pki, "--role", "holder", "--name", "h1", "--ip", "127.0.0.1")
	runCLI(t, "tls", "cert", "--dir", pki, "--role", "client", "--name", "app")
	files := func(role, name string) tlsconf.Files {
		base := filepath.Join(pki, role+"-"+name)
		return tlsconf.Files{Cert: base + ".crt", Key: base + ".key", CA: filepath.Join(pki, "ca.crt")}
	}
	c := startCluster(t, 1, append(tlsArgs(files("master", "m1")), "--tls-client-auth", "require")...)
	holderHTTP := freePort(t)
	c.holderExtra = func(string) []string {
		return append(tlsArgs(files("holder", "h1")), "--tls-client-auth", "require", "--http-addr", holderHTTP)
	}
	h := c.startHolder(t, "h1", "default")

	cliArgs := append([]string{"--masters", c.nodes[0].rpcAddr}, tlsArgs(files("client", "app"))...)
	valueFile := filepath.Join(dir, "value")
	if err := os.WriteFile(valueFile, []byte("from the helper"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCLI(t, append([]string{"put", "helper/a", valueFile}, cliArgs...)...)
	if out := runCLI(t, append([]string{"get", "helper/a"}, cliArgs...)...); out != "from the helper" {
		t.Fatalf("CLI get with the client certificate: %q", out)
	}

	// A client without TLS: told what is wrong in well under a second, by
	// the master and by the holder; the CLI does not retry it.
	for _, addr := range []string{c.nodes[0].rpcAddr, h.addr} {
		start := time.Now()
		dctx, dcancel := ctxT(5 * time.Second)
		_, err := transport.Dial(dctx, addr, transport.ClientConfig{})
		dcancel()
		if took := time.Since(start); api.CodeOf(err) != api.CodeUnauthenticated || !strings.Contains(err.Error(), "this port speaks TLS") || took > time.Second {
			t.Fatalf("%s: a plain client after %v: %v", addr, took, err)
		}
	}
	start := time.Now()
	out, err := runCLIErr("get", "helper/a", "--masters", c.nodes[0].rpcAddr)
	if err == nil || !strings.Contains(out, "this port speaks TLS: give --tls-ca") || time.Since(start) > 5*time.Second {
		t.Fatalf("CLI without TLS after %v: %v\n%s", time.Since(start), err, out)
	}

	// The holder's HTTP port: HTTPS with its certificate, no client
	// certificate needed; plain HTTP gets nothing.
	caOnly := clientTLS(t, files("client", "app")).Clone()
	caOnly.GetClientCertificate = nil
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: caOnly, DisableKeepAlives: true}}
	if _, got := testutil.HTTPGet(t, hc, "https://"+holderHTTP+"/metrics"); !strings.Contains(got, "sexton_holder_") {
		t.Fatalf("holder /metrics over HTTPS:\n%.500s", got)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + holderHTTP + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("holder /metrics over plain HTTP: %s", resp.Status)
		}
	}
}
