package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/client"
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
	if _, err := c.lib().Put(ctx, "roles/a", []byte("alpha"), client.PutOptions{Pool: "p1", Replicas: 1}); err != nil {
		t.Fatalf("put with the client token: %v", err)
	}
	if v, _, err := c.lib().Get(ctx, "roles/a"); err != nil || string(v) != "alpha" {
		t.Fatalf("get with the client token: %q %v", v, err)
	}

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
	_, metrics := httpGet(t, "http://"+c.nodes[0].httpAddr+"/metrics")
	if !strings.Contains(metrics, `sexton_rpc_audit_total{method="SnapshotSave",outcome="PERMISSION_DENIED",role="client"} 1`) {
		t.Fatalf("/metrics lacks the refused snapshot save:\n%s", grepLines(metrics, "sexton_rpc_audit_total"))
	}
}
