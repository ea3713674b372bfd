package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/internal/testport"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/transport"
)

// binary is the sexton binary built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sexton-integration-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sexton")
	build := exec.Command("go", "build", "-tags", "testhooks", "-o", binary, "sexton/cmd/sexton")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sexton:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ports is this package's own range: test packages run as parallel
// processes, and two picking from one range could collide.
var ports = testport.Range{Lo: 26000, Hi: 32000}

func freePort(t *testing.T) string {
	t.Helper()
	return ports.Addr(t)
}

// proc is one sexton process the test started.
type proc struct {
	t    *testing.T
	name string
	args []string
	env  []string
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(t *testing.T, name, logPath string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, args: args, env: env, log: logPath}
	p.start()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(binary, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), p.env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() { p.signal(syscall.SIGKILL) }

// stop sends SIGTERM and waits.
func (p *proc) stop() { p.signal(syscall.SIGTERM) }

// live is p's process and the channel closed when it exits, or nil when
// none runs.
func (p *proc) live() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil, nil
	}
	select {
	case <-done:
		return nil, nil
	default:
		return cmd, done
	}
}

func (p *proc) signal(sig syscall.Signal) {
	cmd, done := p.live()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// wait waits for the process to exit by itself and returns its exit code.
func (p *proc) wait(d time.Duration) (int, bool) {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
	case <-time.After(d):
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, true
}

func (p *proc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// masterNode is one master of a test cluster.
type masterNode struct {
	*proc
	id, dir, raftAddr, rpcAddr, httpAddr string
}

type cluster struct {
	t       *testing.T
	nodes   []*masterNode
	token   string
	extra   []string
	clients []*transport.ClusterClient
	libOnce sync.Once
	libCl   *client.Client

	// tlsClient is the harness's own TLS config when the masters run
	// with --tls-cert/--tls-key/--tls-ca: it presents the same files.
	tlsClient *tls.Config
	// holderExtra, if set, is appended to each holder's arguments (its
	// TLS files).
	holderExtra func(name string) []string
}

// lib is a session-carrying client library instance for the cluster,
// shared by the helpers that put and remove.
func (c *cluster) lib() *client.Client {
	c.libOnce.Do(func() {
		cl, err := client.New(client.Config{Masters: c.addrs(), Token: c.token, TLS: c.tlsClient, Timeout: 20 * time.Second})
		if err != nil {
			c.t.Fatal(err)
		}
		c.libCl = cl
		c.t.Cleanup(cl.Close)
	})
	return c.libCl
}

// startCluster starts n masters with --bootstrap and the same --peers.
func startCluster(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	return startClusterEnv(t, n, nil, extra...)
}

// startClusterEnv is startCluster with extra environment for every master
// (MOONCAKE_DFS_* for the DFS tests).
func startClusterEnv(t *testing.T, n int, env []string, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, extra: extra}
	var files tlsconf.Files
	for i, a := range extra {
		if i+1 >= len(extra) {
			break
		}
		switch a {
		case "--cluster-token":
			c.token = extra[i+1]
		case "--tls-cert":
			files.Cert = extra[i+1]
		case "--tls-key":
			files.Key = extra[i+1]
		case "--tls-ca":
			files.CA = extra[i+1]
		}
	}
	if files.Enabled() {
		src, err := tlsconf.Load(files)
		if err != nil {
			t.Fatal(err)
		}
		c.tlsClient = src.ClientConfig()
	}
	base := t.TempDir()
	var peers []string
	for i := 0; i < n; i++ {
		m := &masterNode{id: fmt.Sprintf("m%d", i+1), raftAddr: freePort(t), rpcAddr: freePort(t), httpAddr: freePort(t)}
		m.dir = filepath.Join(base, m.id)
		peers = append(peers, m.id+"="+m.raftAddr)
		c.nodes = append(c.nodes, m)
	}
	for _, m := range c.nodes {
		args := append([]string{"master", "--id", m.id, "--data-dir", m.dir, "--raft-addr", m.raftAddr,
			"--rpc-addr", m.rpcAddr, "--http-addr", m.httpAddr, "--peers", strings.Join(peers, ","), "--bootstrap", "--log-level", "debug"}, extra...)
		m.proc = startProc(t, m.id, filepath.Join(base, m.id+".log"), env, args...)
	}
	t.Cleanup(func() {
		for _, cl := range c.clients {
			cl.Close()
		}
		if t.Failed() {
			for _, m := range c.nodes {
				t.Logf("---- log of %s (last 4000 bytes) ----\n%s", m.id, tail(m.logText(), 4000))
			}
		}
	})
	c.waitLeader(30 * time.Second)
	return c
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func (c *cluster) addrs() []string {
	var out []string
	for _, m := range c.nodes {
		out = append(out, m.rpcAddr)
	}
	return out
}

// client returns a leader-following client given every address, in the
// given rotation.
func (c *cluster) client(rotate int) *transport.ClusterClient {
	a := c.addrs()
	r := rotate % len(a)
	a = append(a[r:], a[:r]...)
	cl := transport.NewClusterClient(a, transport.ClusterConfig{ClientConfig: c.cc(), MaxWait: 20 * time.Second})
	c.clients = append(c.clients, cl)
	return cl
}

// cc is the client config of the harness's own connections: the token
// and, when the masters use TLS, their certificate.
func (c *cluster) cc() transport.ClientConfig {
	return transport.ClientConfig{Token: c.token, TLS: c.tlsClient}
}

func (c *cluster) status(m *masterNode) (api.StatusResponse, error) {
	ctx, cancel := ctxT(2 * time.Second)
	defer cancel()
	var st api.StatusResponse
	err := callOnce(ctx, m.rpcAddr, c.cc(), api.MethodStatus, &api.Empty{}, &st)
	return st, err
}

// waitLeader waits until some running node is a ready leader (it answers
// a linearizable call) and returns it.
func (c *cluster) waitLeader(d time.Duration) *masterNode {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, m := range c.nodes {
			if !m.running() {
				continue
			}
			st, err := c.status(m)
			if err != nil || st.RaftState != "Leader" || st.MasterEpoch == 0 {
				continue
			}
			ctx, cancel := ctxT(2 * time.Second)
			err = callOnce(ctx, m.rpcAddr, c.cc(), api.MethodListSegments, &api.Empty{}, &api.ListSegmentsResponse{})
			cancel()
			if err == nil {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no ready leader within %v", d)
	return nil
}

func (c *cluster) leader() *masterNode { return c.waitLeader(30 * time.Second) }

// follower is a master other than the leader.
func (c *cluster) follower() *masterNode {
	leader := c.leader()
	for _, m := range c.nodes {
		if m != leader {
			return m
		}
	}
	return nil
}

func ctxT(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// fakeHolder mounts a metadata-only segment and heartbeats it, so the
// master can place puts before real holders exist. It never acks tasks
// unless told to.
type fakeHolder struct {
	seg    api.SegmentID
	client string
	epoch  uint64
	pool   string
	cl     *transport.ClusterClient
	stop   chan struct{}
	wait   func() // for the heartbeats to end
}

func mountFake(t *testing.T, cl *transport.ClusterClient, name, pool string, caps ...api.Capability) *fakeHolder {
	t.Helper()
	if caps == nil {
		caps = []api.Capability{api.CapObjectTombstoneV1}
	}
	h := &fakeHolder{seg: api.SegmentID("seg-" + name), client: "client-" + name, pool: pool, cl: cl, stop: make(chan struct{})}
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	resp, err := cl.HolderLink().Mount(ctx, &api.MountLocalDiskRequest{ClientID: h.client, Segment: h.seg, Pool: pool,
		Capacity: 1 << 40, Capabilities: caps, Endpoint: "fake.invalid:1"})
	if err != nil {
		t.Fatalf("mount %s: %v", name, err)
	}
	h.epoch = resp.MountEpoch
	heartbeat := func() {
		ctx, cancel := ctxT(2 * time.Second)
		defer cancel()
		_, _ = cl.HolderLink().Heartbeat(ctx, &api.HeartbeatRequest{ClientID: h.client, Segment: h.seg, MountEpoch: h.epoch, Capacity: 1 << 40})
	}
	heartbeat()
	h.wait = testutil.Every(300*time.Millisecond, h.stop, heartbeat)
	t.Cleanup(h.close)
	// Let the heartbeat land so placement sees the segment live.
	time.Sleep(100 * time.Millisecond)
	return h
}

func (h *fakeHolder) close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.wait()
}

// putMeta creates a metadata-only object (no holder data path).
func putMeta(ctx context.Context, cl *transport.ClusterClient, key, pool string) (api.ObjectIncarnation, error) {
	var st api.PutStartResponse
	if err := cl.Call(ctx, api.MethodPutStart, &api.PutStartRequest{Key: key, Size: 16, ReplicaNum: 1, Pool: pool}, &st); err != nil {
		return api.ObjectIncarnation{}, err
	}
	if err := cl.Call(ctx, api.MethodPutEnd, &api.PutEndRequest{Key: key, Incarnation: st.Incarnation}, nil); err != nil {
		return api.ObjectIncarnation{}, err
	}
	return st.Incarnation, nil
}

func allTasks(t *testing.T, cl *transport.ClusterClient) []api.LocalDeleteTask {
	t.Helper()
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	var resp api.ListTasksResponse
	if err := cl.Call(ctx, api.MethodListTasks, &api.ListTasksRequest{Limit: 1 << 20}, &resp); err != nil {
		t.Fatalf("list tasks: %v", err)
	}
	return resp.Tasks
}

var execCommand = exec.Command

// loseEveryMaster kills every master, deletes its data dir and starts it
// again on the same addresses: a fresh cluster bootstraps there, as after
// the loss of every master's state that a rebuild recovers from.
func (c *cluster) loseEveryMaster(t *testing.T) {
	t.Helper()
	for _, m := range c.nodes {
		m.kill()
	}
	for _, m := range c.nodes {
		if err := os.RemoveAll(m.dir); err != nil {
			t.Fatal(err)
		}
		m.proc.start()
	}
	c.waitLeader(30 * time.Second)
}
