package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/client"
	"sexton/internal/testutil"
)

// Role tokens through the real binaries: the masters take --client-token,
// --holder-token and --operator-token; a holder proves the holder token
// (its --cluster-token) to them and serves clients that prove its
// --client-token; a client puts and gets with the client token. The CLI
// with the client token cannot save a snapshot (PERMISSION_DENIED, exit 1,
// no file, audited in the log and /metrics); with the operator token it
// can; the holder token cannot read an object.
func TestRoleTokensThroughTheBinaries(t *testing.T) {
	c := startCluster(t, 1, "--cluster-token", "masters-only-of-at-least-thirty-two-bytes", "--client-token", "app-token-of-at-least-thirty-two-bytes",
		"--holder-token", "holder-token-of-at-least-thirty-two-bytes", "--operator-token", "ops-token-of-at-least-thirty-two-bytes")
	c.token = "app-token-of-at-least-thirty-two-bytes"
	c.holderExtra = func(string) []string {
		return []string{"--cluster-token", "holder-token-of-at-least-thirty-two-bytes", "--client-token", "app-token-of-at-least-thirty-two-bytes", "--operator-token", "ops-token-of-at-least-thirty-two-bytes"}
	}
	c.startHolder(t, "h1", "p1")

	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	c.putGet(t, ctx, "roles/a", "alpha", client.PutOptions{Pool: "p1", Replicas: 1}, " with the client token")

	masters := []string{"--masters", strings.Join(c.addrs(), ",")}
	snap := filepath.Join(t.TempDir(), "snap")
	out, err := runCLIErr(append([]string{"operator", "snapshot", "save", snap, "--cluster-token", "app-token-of-at-least-thirty-two-bytes"}, masters...)...)
	if err == nil || !strings.Contains(out, "PERMISSION_DENIED") || !strings.Contains(out, "SnapshotSave needs role operator; this caller is client") {
		t.Fatalf("snapshot save with the client token: %v\n%s", err, out)
	}
	if _, statErr := os.Stat(snap); statErr == nil {
		t.Fatal("a refused snapshot save left a file")
	}
	out, err = runCLIErr(append([]string{"get", "roles/a", "--cluster-token", "holder-token-of-at-least-thirty-two-bytes"}, masters...)...)
	if err == nil || !strings.Contains(out, "PERMISSION_DENIED") {
		t.Fatalf("get with the holder token: %v\n%s", err, out)
	}
	runCLI(t, append([]string{"operator", "snapshot", "save", snap, "--cluster-token", "ops-token-of-at-least-thirty-two-bytes"}, masters...)...)
	if fi, err := os.Stat(snap); err != nil || fi.Size() == 0 {
		t.Fatalf("snapshot save with the operator token: %v", err)
	}

	// The operator's fsck (master reads, the reconcile query, holder
	// scans) and a client's status work with their tokens.
	runCLI(t, append([]string{"operator", "fsck", "--cluster-token", "ops-token-of-at-least-thirty-two-bytes"}, masters...)...)
	runCLI(t, append([]string{"status", "--cluster-token", "app-token-of-at-least-thirty-two-bytes"}, masters...)...)

	log := c.nodes[0].logText()
	for _, w := range []string{
		`rpc audit: refused: method=SnapshotSave role=client identity="client token"`,
		`rpc audit: method=SnapshotSave role=operator identity="operator token"`,
	} {
		if !strings.Contains(log, w) {
			t.Errorf("the master's log lacks %q", w)
		}
	}
	for _, secret := range []string{"app-token-of-at-least-thirty-two-bytes", "ops-token-of-at-least-thirty-two-bytes", "holder-token-of-at-least-thirty-two-bytes", "masters-only-of-at-least-thirty-two-bytes"} {
		if strings.Contains(log, secret) {
			t.Errorf("the master's log shows the token %q", secret)
		}
	}
	if strings.Contains(log, "no role token is set") {
		t.Error("the shared-token warning was logged with role tokens set")
	}
	_, metrics := testutil.HTTPGet(t, nil, "http://"+c.nodes[0].httpAddr+"/metrics")
	if !strings.Contains(metrics, `sexton_rpc_audit_total{method="SnapshotSave",outcome="PERMISSION_DENIED",role="client"} 1`) {
		t.Fatalf("/metrics lacks the refused snapshot save:\n%s", grepLines(metrics, "sexton_rpc_audit_total"))
	}
}

// Token lists through the binaries: a master and a holder that list two
// client tokens serve a client proving either (the put through the
// master and the holder's data port, the get likewise); a holder that
// lists two holder tokens proves the first to the masters, which list
// both. Once the holder is restarted with the new client token alone, a
// get with the old one is refused at its data port (UNAUTHENTICATED).
func TestTokenListsThroughTheBinaries(t *testing.T) {
	const (
		oldApp    = "old-app-token-of-at-least-thirty-two-bytes"
		newApp    = "new-app-token-of-at-least-thirty-two-bytes"
		oldHolder = "old-holder-token-of-at-least-thirty-two-bytes"
		newHolder = "new-holder-token-of-at-least-thirty-two-bytes"
		ops       = "ops-token-of-at-least-thirty-two-bytes"
	)
	c := startCluster(t, 1, "--cluster-token", "masters-only-of-at-least-thirty-two-bytes", "--client-token", oldApp+","+newApp,
		"--holder-token", oldHolder+","+newHolder, "--operator-token", ops)
	c.token = newApp
	holderArgs := func(client string) []string {
		return []string{"--cluster-token", newHolder + "," + oldHolder, "--client-token", client, "--operator-token", ops}
	}
	c.holderExtra = func(string) []string { return holderArgs(oldApp + "," + newApp) }
	h := c.startHolder(t, "h1", "p1")
	if log := h.logText(); strings.Contains(log, "UNAUTHENTICATED") {
		t.Fatalf("the holder was refused by the master:\n%s", tail(log, 2000))
	}

	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	libWith := func(token string) *client.Client {
		cl, err := client.New(client.Config{Masters: c.addrs(), Token: token, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	if _, err := libWith(oldApp).Put(ctx, "lists/a", []byte("alpha"), client.PutOptions{Pool: "p1", Replicas: 1}); err != nil {
		t.Fatalf("put with the old client token: %v", err)
	}
	if v, _, err := libWith(newApp).Get(ctx, "lists/a"); err != nil || string(v) != "alpha" {
		t.Fatalf("get with the new client token: %q %v", v, err)
	}

	// Drop the old client token on the holder: its data port refuses it.
	c.holderExtra = func(string) []string { return holderArgs(newApp) }
	h.proc.args = h.args(c)
	c.restartHolder(t, h)
	if v, _, err := libWith(newApp).Get(ctx, "lists/a"); err != nil || string(v) != "alpha" {
		t.Fatalf("get with the new client token after the roll: %q %v", v, err)
	}
	// The master still lists the old token; the holder's refusal is what
	// the read fails on.
	if _, _, err := libWith(oldApp).Get(ctx, "lists/a"); err == nil || !strings.Contains(err.Error(), h.addr+": UNAUTHENTICATED") {
		t.Fatalf("get with the dropped client token: %v, want the holder's UNAUTHENTICATED", err)
	}
}
