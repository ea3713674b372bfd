package check

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/deploy/check/internal/sextonbin"
)

// clusterPortOffsets are deploy/local/cluster.sh's ports above
// SEXTON_PORT_BASE: master Raft, RPC and HTTP, holder data RPC and HTTP.
var clusterPortOffsets = []int{1, 2, 3, 101, 102, 103, 201, 202, 203, 301, 302, 401, 402}

// TestLocalClusterPorts: deploy/local/cluster.sh takes its ports from
// SEXTON_PORT_BASE, so it runs beside `make run` and beside another copy
// of itself: up with a free base listens on exactly base plus its
// offsets, down frees them; a base that is no port number is refused.
func TestLocalClusterPorts(t *testing.T) {
	script := filepath.Join(sextonbin.Root(t), "deploy", "local", "cluster.sh")
	bin := sextonbin.Path(t)
	run := func(base, dir string, args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "SEXTON_PORT_BASE="+base, "SEXTON_LOCAL_DIR="+dir, "SEXTON_BIN="+bin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("7x", t.TempDir(), "status"); err == nil || !strings.Contains(out, "SEXTON_PORT_BASE=7x") {
		t.Errorf("SEXTON_PORT_BASE=7x: %v %q, want a refusal naming it", err, out)
	}

	base := freeBase(t)
	dir := t.TempDir()
	t.Cleanup(func() { run(fmt.Sprint(base), dir, "down") })
	out, err := run(fmt.Sprint(base), dir, "up")
	if err != nil {
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("export SEXTON_MASTERS=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", base+101, base+102, base+103); !strings.Contains(out, want) {
		t.Errorf("cluster.sh up printed\n%s\nwant %q", out, want)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, off := range clusterPortOffsets {
		addr := fmt.Sprintf("127.0.0.1:%d", base+off)
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
				t.Fatalf("nothing listens on %s (base %d + %d) after up: %v; logs %v", addr, base, off, err, logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if out, err := run(fmt.Sprint(base), dir, "down"); err != nil || strings.Count(out, "stopped ") != 5 {
		t.Fatalf("cluster.sh down: %v\n%s", err, out)
	}
	for _, off := range clusterPortOffsets {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off)); err != nil {
			t.Errorf("port %d still taken after down: %v", base+off, err)
		} else {
			ln.Close()
		}
	}
}

// freeBase finds a SEXTON_PORT_BASE whose ports are all free now.
func freeBase(t *testing.T) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(40000)
		free := true
		for _, off := range clusterPortOffsets {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port base found")
	return 0
}
