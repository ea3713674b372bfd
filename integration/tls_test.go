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

func issue(t *testing.T, ca *testutil.CA, name string) tlsconf.Files {
	t.Helper()
	f, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
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
	master, err := ca.IssueMaster("master", "m1", "m2", "m3")
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 3, append(tlsArgs(master), "--tls-client-auth", "require")...)
	c.holderExtra = func(name string) []string {
		return append(tlsArgs(issue(t, ca, name)), "--tls-client-auth", "require")
	}
	h1 := c.startHolder(t, "h1", "p1")
	c.startHolder(t, "h2", "p1")

	// The library: put two replicas, get, over TLS to masters and holders.
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	if _, err := c.lib().Put(ctx, "tls/a", []byte("alpha"), client.PutOptions{Pool: "p1", Replicas: 2}); err != nil {
		t.Fatalf("put: %v", err)
	}
	if v, _, err := c.lib().Get(ctx, "tls/a"); err != nil || string(v) != "alpha" {
		t.Fatalf("get: %q %v", v, err)
	}

	// The CLI with its own certificate: put, get, rm.
	cli := issue(t, ca, "cli")
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

	// A client of another CA is refused by masters and holders; so is a
	// client without TLS (it gets no hello and gives up).
	intruder := issue(t, other, "intruder")
	out, err := runCLIErr(append([]string{"get", "tls/a", "--timeout", "3s", "--masters", strings.Join(c.addrs(), ",")}, tlsArgs(intruder)...)...)
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
		"--pool", "p1", "--client-id", "hbad", "--capacity", "1GiB", "--log-level", "debug"}
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
	if _, err := c.lib().Put(ctx, "tls/c", []byte("charlie"), client.PutOptions{Pool: "p1", Replicas: 2}); err != nil {
		t.Fatalf("put after failover: %v", err)
	}
	if v, _, err := c.lib().Get(ctx, "tls/c"); err != nil || string(v) != "charlie" {
		t.Fatalf("get after failover: %q %v", v, err)
	}
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
