package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/transport"
)

// holderNode is one real holder process.
type holderNode struct {
	*proc
	name, dir, addr, pool string
}

func (c *cluster) startHolder(t *testing.T, name, pool string, env ...string) *holderNode {
	t.Helper()
	h := &holderNode{name: name, dir: filepath.Join(t.TempDir(), name), addr: freePort(t), pool: pool}
	h.proc = startProc(t, name, h.dir+".log", env, h.args(c)...)
	c.waitHolderMounted(t, h)
	return h
}

func (h *holderNode) args(c *cluster) []string {
	a := []string{"holder", "--masters", strings.Join(c.addrs(), ","), "--dir", h.dir, "--rpc-addr", h.addr,
		"--pool", h.pool, "--client-id", h.name, "--capacity", "1GiB", "--log-level", "debug"}
	if c.token != "" {
		a = append(a, "--cluster-token", c.token)
	}
	if c.holderExtra != nil {
		a = append(a, c.holderExtra(h.name)...)
	}
	return a
}

// restartHolder starts the holder again on its directory, with env.
func (c *cluster) restartHolder(t *testing.T, h *holderNode, env ...string) {
	t.Helper()
	h.kill()
	h.proc.env = env
	h.proc.start()
	c.waitHolderMounted(t, h)
}

func (c *cluster) waitHolderMounted(t *testing.T, h *holderNode) api.HolderStatusResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := holderStatusWith(h.addr, c.cc())
		if err == nil && st.Mounted {
			return st
		}
		if !h.running() {
			t.Fatalf("holder %s exited:\n%s", h.name, tail(h.logText(), 3000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder %s did not mount: %v\n%s", h.name, err, tail(h.logText(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func holderStatus(addr, token string) (api.HolderStatusResponse, error) {
	return holderStatusWith(addr, transport.ClientConfig{Token: token})
}

func holderStatusWith(addr string, cc transport.ClientConfig) (api.HolderStatusResponse, error) {
	ctx, cancel := ctxT(3 * time.Second)
	defer cancel()
	var st api.HolderStatusResponse
	err := callOnce(ctx, addr, cc, api.MethodHolderStatus, &api.Empty{}, &st)
	return st, err
}

// putGet puts value under key through the library and reads it back,
// failing the test (saying when: "", " after failover") if either call
// fails or the value read is not the one put.
func (c *cluster) putGet(t *testing.T, ctx context.Context, key, value string, opts client.PutOptions, when string) {
	t.Helper()
	if _, err := c.lib().Put(ctx, key, []byte(value), opts); err != nil {
		t.Fatalf("put%s: %v", when, err)
	}
	if v, _, err := c.lib().Get(ctx, key); err != nil || string(v) != value {
		t.Fatalf("get%s: %q %v", when, v, err)
	}
}

// putValue runs a real put through the client library: PutGrant, the
// value to every replica with its grant, PutCommit.
func putValue(t *testing.T, c *cluster, _ *transport.ClusterClient, key, pool string, value []byte) api.ObjectIncarnation {
	t.Helper()
	return putReplicas(t, c, key, pool, 0, value)
}

// putReplicas puts value under key on replicas holders of pool (0: the
// default number) through the cluster's client library and returns its
// incarnation; a put that fails fails the test.
func putReplicas(t *testing.T, c *cluster, key, pool string, replicas int, value []byte) api.ObjectIncarnation {
	t.Helper()
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	inc, err := c.lib().Put(ctx, key, value, client.PutOptions{Pool: pool, Replicas: replicas})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return inc
}

func holderCall(ctx context.Context, addr, token, method string, req, resp any) error {
	return callOnce(ctx, addr, transport.ClientConfig{Token: token, MaxFrame: 64 << 20}, method, req, resp)
}

// callOnce dials addr, makes one call on the connection and closes it.
func callOnce(ctx context.Context, addr string, cc transport.ClientConfig, method string, req, resp any) error {
	conn, err := transport.Dial(ctx, addr, cc)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Call(ctx, method, req, resp)
}

// readFromHolder reads (key, inc) straight from a holder.
func readFromHolder(h *holderNode, token, key string, inc api.ObjectIncarnation) ([]byte, error) {
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	var resp api.HolderReadResponse
	err := holderCall(ctx, h.addr, token, api.MethodHolderRead, &api.HolderReadRequest{Key: key, Incarnation: inc}, &resp)
	return resp.Value, err
}

// waitNoTasks waits until the leader has no pending task for key.
func waitNoTasks(t *testing.T, cl *transport.ClusterClient, key string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		found := false
		for _, task := range allTasks(t, cl) {
			if task.Key == key {
				found = true
			}
		}
		if !found {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("task for %s still pending after %v", key, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasTask(t *testing.T, cl *transport.ClusterClient, key string, inc api.ObjectIncarnation) bool {
	for _, task := range allTasks(t, cl) {
		if task.Key == key && task.Incarnation == inc {
			return true
		}
	}
	return false
}

func mustRemove(t *testing.T, c *cluster, key string) {
	t.Helper()
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	if err := c.lib().Remove(ctx, key); err != nil {
		t.Fatalf("remove %s: %v", key, err)
	}
}

// fsckClean runs `sexton operator fsck` and fails the test unless clean.
func fsckClean(t *testing.T, c *cluster) {
	t.Helper()
	args := []string{"operator", "fsck", "--masters", strings.Join(c.addrs(), ",")}
	if c.token != "" {
		args = append(args, "--cluster-token", c.token)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := runCLIErr(args...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fsck not clean: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func runCLIErr(args ...string) (string, error) {
	out, err := execCommand(binary, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%v", err)
	}
	return string(out), nil
}
