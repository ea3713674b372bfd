package integration

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"sexton/client"
	"sexton/internal/testutil"
)

// rm --wait shows per replica where a removal stands: while one holder is
// stopped its replica is not acknowledged (a timed-out wait exits 1 and
// says so; stat names the stopped holder's address), and once the holder
// runs again the wait ends with every replica acknowledged.
func TestRmWaitReportsPendingUntilTheHolderReturns(t *testing.T) {
	c := startCluster(t, 1, "--holder-ttl", "1s")
	h1 := c.startHolder(t, "rw1", "rwp")
	h2 := c.startHolder(t, "rw2", "rwp")
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	for _, k := range []string{"rw/a", "rw/b"} {
		if _, err := c.lib().Put(ctx, k, []byte("value"), client.PutOptions{Pool: "rwp", Replicas: 2}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	m := []string{"--masters", strings.Join(c.addrs(), ",")}

	if err := h1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = h1.cmd.Process.Signal(syscall.SIGCONT)
		}
	})

	// A wait that runs out: exit 1, the stopped holder's replica shown
	// unacknowledged, the other acknowledged.
	out, err := exec.Command(binary, append([]string{"rm", "rw/a", "--wait", "2s", "--json"}, m...)...).Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("rm --wait with a stopped holder: %v, want exit 1\n%s", err, out)
	}
	var res struct {
		Removed  int  `json:"removed"`
		Done     bool `json:"done"`
		Replicas []struct {
			Holder, State string
		} `json:"replicas"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("rm --json: %v\n%s", err, out)
	}
	states := map[string]string{}
	for _, r := range res.Replicas {
		states[r.Holder] = r.State
	}
	if res.Removed != 1 || res.Done || len(res.Replicas) != 2 || states[h2.addr] != "acknowledged" ||
		states[h1.addr] == "" || states[h1.addr] == "acknowledged" {
		t.Fatalf("rm --wait 2s with %s stopped: %s", h1.addr, out)
	}

	// stat of the removed key names the stopped holder, and still exits 1.
	out, err = exec.Command(binary, append([]string{"stat", "rw/a"}, m...)...).Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), h1.addr) || !strings.Contains(string(out), "removed:") {
		t.Fatalf("stat of a removed key with a stopped holder (%s): %v\n%s", h1.addr, err, out)
	}

	// A wait that outlasts the stop: pending lines on stderr naming the
	// stopped holder, then done once it runs again.
	var stdout, stderr testutil.SyncBuffer
	rm := exec.Command(binary, append([]string{"rm", "rw/b", "--wait", "60s"}, m...)...)
	rm.Stdout, rm.Stderr = &stdout, &stderr
	if err := rm.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(stderr.String(), "holder="+h1.addr+" state=holder_down") {
		if time.Now().After(deadline) {
			_ = rm.Process.Kill()
			t.Fatalf("rm --wait never said %s is down:\n%s", h1.addr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := h1.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waited := make(chan error, 1)
	go func() { waited <- rm.Wait() }()
	select {
	case err := <-waited:
		if err != nil || !strings.Contains(stdout.String(), "all 2 replicas seen acknowledged") {
			t.Fatalf("rm --wait after the holder returned: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = rm.Process.Kill()
		t.Fatalf("rm --wait still waiting 30s after the holder returned:\n%s", stderr.String())
	}
	t.Logf("rm --wait stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
}
