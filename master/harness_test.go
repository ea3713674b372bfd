package master

// The in-process master harness: one or three master.Node instances in the
// test process, a transport.ClusterClient to them, and a fake holder that
// speaks the holder protocol (mount, heartbeat, fetch, ack, reconcile,
// evict) so handler and follow-loop behaviour is tested without the holder
// package.
//
//	tc := startCluster(t, 1, func(c *Config) { c.LeaseTTL = 300 * time.Millisecond })
//	h := tc.mountHolder(t, "seg-a", "")
//	inc := tc.put(t, "k", 10, 1)          // PutStart + PutEnd on the leader
//	tasks := h.fetch(t, 0, time.Second)   // long poll (deletes wait out
//	                                      // the new leader's lease floor)
//	h.ack(t, tasks, ackAll(api.AckRemoved))
//	tc.kill(tc.leaderIndex(t))            // crash the leader, no handover
//	tc.waitLeader(t)                      // a new ready leader
//
// Everything is torn down by t.Cleanup.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"sexton/api"
	"sexton/fsm"
	"sexton/internal/secret"
	"sexton/internal/testport"
	"sexton/internal/testutil"
	"sexton/transport"
)

func TestMain(m *testing.M) {
	// hashicorp/raft's NetworkTransport.Close closes its listener but not
	// the pooled connections peers opened to it, so the goroutine serving
	// such a connection stays blocked in a read until the process exits.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).handleConn"))
}

// harnessTimeout bounds every wait of the harness: elections, calls, polls.
const harnessTimeout = 15 * time.Second

// testCluster is a running set of in-process masters.
type testCluster struct {
	t     testing.TB
	cfgs  []Config
	nodes []*Node // nil while a node is stopped
	// Client follows the leader across all nodes' RPC addresses.
	Client *transport.ClusterClient
	logs   *testutil.SyncBuffer
}

// startCluster starts n (1 or 3) masters bootstrapped together and waits
// for a ready leader. Raft timeouts are short (elections well under a
// second); opts adjust every node's Config before it starts.
func startCluster(t testing.TB, n int, opts ...func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, logs: masterLogs()}
	var peers []Peer
	for i := 0; i < n; i++ {
		peers = append(peers, Peer{ID: fmt.Sprintf("m%d", i+1), RaftAddr: freeAddr(t)})
	}
	root := t.TempDir()
	var rpcAddrs []string
	for i := 0; i < n; i++ {
		cfg := Config{
			ID:                 peers[i].ID,
			DataDir:            filepath.Join(root, peers[i].ID),
			RaftAddr:           peers[i].RaftAddr,
			RPCAddr:            freeAddr(t),
			Peers:              peers,
			Bootstrap:          true,
			HeartbeatTimeout:   150 * time.Millisecond,
			ElectionTimeout:    150 * time.Millisecond,
			LeaderLeaseTimeout: 75 * time.Millisecond,
			CommitTimeout:      2 * time.Millisecond,
			ApplyTimeout:       5 * time.Second,
			// Deletes are withheld while a read lease lasts, and for one
			// lease period after a node becomes leader: keep it short.
			LeaseTTL: 300 * time.Millisecond,
			Logger: hclog.New(&hclog.LoggerOptions{
				Name: "master-" + peers[i].ID, Level: hclog.Info, Output: tc.logs,
			}),
			// A halt in a test is a bug: stop the test binary at once with
			// the reason (the default would exit 3 without one, and a
			// halt that returned would leave raft's apply loop blocked).
			Halt: func(err error) { panic(fmt.Sprintf("master halted: %v\n%s", err, tc.logs.String())) },
		}
		for _, o := range opts {
			o(&cfg)
		}
		tc.cfgs = append(tc.cfgs, cfg)
		rpcAddrs = append(rpcAddrs, cfg.RPCAddr)
	}
	tc.nodes = make([]*Node, n)
	t.Cleanup(func() {
		if tc.Client != nil {
			tc.Client.Close()
		}
		for i := range tc.nodes {
			tc.stop(i)
		}
		if t.Failed() {
			t.Logf("master logs:\n%s", tc.logs.String())
		}
	})
	for i := range tc.cfgs {
		tc.start(i)
	}
	tc.Client = transport.NewClusterClient(rpcAddrs, transport.ClusterConfig{
		ClientConfig: transport.ClientConfig{Token: secret.First(tc.cfgs[0].ClusterToken)},
		MaxWait:      harnessTimeout, BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
	})
	tc.waitLeader(t)
	return tc
}

// start (re)starts node i with its original Config: same data directory,
// same addresses.
func (tc *testCluster) start(i int) {
	tc.t.Helper()
	if tc.nodes[i] != nil {
		tc.t.Fatalf("node %d already running", i)
	}
	n, err := New(tc.cfgs[i])
	if err != nil {
		tc.t.Fatalf("start master %s: %v", tc.cfgs[i].ID, err)
	}
	tc.nodes[i] = n
}

// stop shuts node i down gracefully (a leader hands leadership over first).
func (tc *testCluster) stop(i int) {
	if n := tc.nodes[i]; n != nil {
		n.Shutdown()
		tc.nodes[i] = nil
	}
}

// kill stops node i as a crash would: Raft stops first, so a leader hands
// nothing over and the others must elect a new one after a timeout.
func (tc *testCluster) kill(i int) {
	n := tc.nodes[i]
	if n == nil {
		return
	}
	if n.rpc != nil {
		_ = n.rpc.Close()
	}
	n.guard.Close() // a term write parked there would block raft's shutdown
	_ = n.raft.Shutdown().Error()
	n.Shutdown()
	tc.nodes[i] = nil
}

// node returns running node i (nil when stopped).
func (tc *testCluster) node(i int) *Node { return tc.nodes[i] }

// waitLeader waits until exactly one running node is the ready leader and
// returns it.
// waitAllApplied waits until every node has applied what the leader has.
func (tc *testCluster) waitAllApplied(t testing.TB, what string) {
	t.Helper()
	leader := tc.waitLeader(t)
	testutil.WaitFor(t, harnessTimeout, func() bool {
		for _, n := range tc.nodes {
			if n.fsm.Stats().AppliedIndex < leader.fsm.Stats().AppliedIndex {
				return false
			}
		}
		return true
	}, what)
}

func (tc *testCluster) waitLeader(t testing.TB) *Node {
	t.Helper()
	return tc.nodes[tc.leaderIndex(t)]
}

// leaderIndex waits for a ready leader and returns its index.
func (tc *testCluster) leaderIndex(t testing.TB) int {
	t.Helper()
	deadline := time.Now().Add(harnessTimeout)
	for time.Now().Before(deadline) {
		at, count := -1, 0
		for i, n := range tc.nodes {
			if n != nil && n.IsLeader() {
				at, count = i, count+1
			}
		}
		if count == 1 {
			return at
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no ready leader within %v", harnessTimeout)
	return -1
}

// call calls method on the leader through the cluster client.
// link is the holder protocol over tc.Client, as the fake holders speak
// it; a call whose context has no deadline gets harnessTimeout.
func (tc *testCluster) link() transport.HolderLink {
	return transport.NewHolderLink(func(ctx context.Context, method string, req, resp any) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, harnessTimeout)
			defer cancel()
		}
		return tc.Client.Call(ctx, method, req, resp)
	})
}

func (tc *testCluster) call(method string, req, resp any) error {
	ctx, cancel := context.WithTimeout(context.Background(), harnessTimeout)
	defer cancel()
	return tc.Client.Call(ctx, method, req, resp)
}

// waitLeaseFloor waits until the leader's new-term lease floor (every
// incarnation leased, so no delete task fetched, for one lease period
// after it became leader) has passed.
func (tc *testCluster) waitLeaseFloor(t testing.TB) {
	t.Helper()
	n := tc.waitLeader(t)
	floor := n.soft.LeaseFloor()
	time.Sleep(time.Until(floor) + 10*time.Millisecond)
}

// putStart starts a put of key (size bytes, replicas LOCAL_DISK copies).
func (tc *testCluster) putStart(req *api.PutStartRequest) (*api.PutStartResponse, error) {
	var resp api.PutStartResponse
	if err := tc.call(api.MethodPutStart, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// put starts and completes a put of key and returns its PutStart answer.
func (tc *testCluster) put(t testing.TB, key string, size int64, replicas int) *api.PutStartResponse {
	t.Helper()
	ps, err := tc.putStart(&api.PutStartRequest{Key: key, Size: size, ReplicaNum: replicas})
	if err != nil {
		t.Fatalf("PutStart %q: %v", key, err)
	}
	if err := tc.call(api.MethodPutEnd, &api.PutEndRequest{Key: key, Incarnation: ps.Incarnation}, &api.Empty{}); err != nil {
		t.Fatalf("PutEnd %q: %v", key, err)
	}
	return ps
}

// get reads key's newest complete incarnation.
func (tc *testCluster) get(key string) (*api.ObjectInfo, error) {
	var resp api.GetResponse
	if err := tc.call(api.MethodGet, &api.KeyRequest{Key: key}, &resp); err != nil {
		return nil, err
	}
	return &resp.Object, nil
}

// setSettings proposes a Settings entry on the leader (zero fields are
// left as they are).
func (tc *testCluster) setSettings(t testing.TB, set api.Settings) {
	t.Helper()
	res, err := tc.waitLeader(t).propose(&fsm.Settings{V: fsm.SettingsV1, Settings: set, Now: time.Now().UnixNano()})
	if err != nil {
		t.Fatalf("settings %+v: %v", set, err)
	}
	if r := res.(*fsm.SettingsResult); r.Err != nil {
		t.Fatalf("settings %+v: %v", set, r.Err)
	}
}

// remove removes key.
func (tc *testCluster) remove(key string) error {
	return tc.call(api.MethodRemove, &api.RemoveRequest{Key: key}, &api.Empty{})
}

// fakeHolder is a test-side holder of one segment: it mounts with
// OBJECT_TOMBSTONE_V1 and then does exactly the calls a test asks for.
type fakeHolder struct {
	tc       *testCluster
	Seg      api.SegmentID
	ClientID string
	Process  string
	Pool     string
	Capacity int64
	Epoch    uint64 // mount epoch of the last successful mount

	// epochMu orders mount's write of Epoch with keepAlive's reads (the
	// test goroutine reads Epoch directly: it is the only writer).
	epochMu   sync.Mutex
	stopBeats func()
}

// mountHolder mounts a new fake holder of segment seg in pool and keeps it
// alive with heartbeats every 100 ms until the test ends.
func (tc *testCluster) mountHolder(t testing.TB, seg, pool string) *fakeHolder {
	t.Helper()
	h := &fakeHolder{tc: tc, Seg: api.SegmentID(seg), ClientID: "holder-" + seg,
		Process: fmt.Sprintf("proc-%x", rand.Uint64()), Pool: pool, Capacity: 1 << 30}
	if err := h.mount(); err != nil {
		t.Fatalf("mount %s: %v", seg, err)
	}
	h.stopBeats = h.keepAlive(100 * time.Millisecond)
	t.Cleanup(h.stopBeats)
	return h
}

// die stops the holder's heartbeats, as a crash would: the leader keeps
// it live for HolderTTL after the last one.
func (h *fakeHolder) die() { h.stopBeats() }

// mount (re)mounts the segment and records the mount epoch.
func (h *fakeHolder) mount() error {
	resp, err := h.tc.link().Mount(context.Background(), &api.MountLocalDiskRequest{
		ClientID: h.ClientID, Segment: h.Seg, Pool: h.Pool, Capacity: h.Capacity,
		Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: "fake-" + string(h.Seg), Process: h.Process,
	})
	if err == nil {
		h.epochMu.Lock()
		h.Epoch = resp.MountEpoch
		h.epochMu.Unlock()
	}
	return err
}

// heartbeat sends one heartbeat at the current mount epoch.
func (h *fakeHolder) heartbeat() (*api.HeartbeatResponse, error) {
	resp, err := h.tc.link().Heartbeat(context.Background(), &api.HeartbeatRequest{ClientID: h.ClientID, Segment: h.Seg,
		MountEpoch: h.Epoch, Capacity: h.Capacity})
	return &resp, err
}

// keepAlive heartbeats every interval in the background until the returned
// stop is called (errors are ignored: a test that cares calls heartbeat).
func (h *fakeHolder) keepAlive(interval time.Duration) (stop func()) {
	done := make(chan struct{})
	wait := testutil.Every(interval, done, func() {
		ctx, cancel := context.WithTimeout(context.Background(), interval*5)
		defer cancel()
		h.epochMu.Lock()
		epoch := h.Epoch
		h.epochMu.Unlock()
		_, _ = h.tc.link().Heartbeat(ctx, &api.HeartbeatRequest{ClientID: h.ClientID, Segment: h.Seg,
			MountEpoch: epoch, Capacity: h.Capacity})
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wait() }) }
}

// fetchResp does one fetch (a long poll when wait > 0).
func (h *fakeHolder) fetchResp(limit int, wait time.Duration) (*api.FetchTasksResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait+harnessTimeout)
	defer cancel()
	resp, err := h.tc.link().Fetch(ctx, &api.FetchTasksRequest{Segment: h.Seg, MountEpoch: h.Epoch,
		Limit: limit, WaitMillis: wait.Milliseconds()})
	return &resp, err
}

// wantNoTasks fails unless a fetch now returns nothing; format names
// the case with a %v for the tasks fetched.
func (h *fakeHolder) wantNoTasks(t testing.TB, format string) {
	t.Helper()
	if tasks := h.fetch(t, 0, 0); len(tasks) != 0 {
		t.Fatalf(format, tasks)
	}
}

// fetch does one fetch and fails the test on an error.
func (h *fakeHolder) fetch(t testing.TB, limit int, wait time.Duration) []api.LocalDeleteTask {
	t.Helper()
	resp, err := h.fetchResp(limit, wait)
	if err != nil {
		t.Fatalf("fetch %s: %v", h.Seg, err)
	}
	return resp.Tasks
}

// ackAll is an ack policy answering every task with outcome.
func ackAll(outcome api.AckOutcome) func(api.LocalDeleteTask) api.AckOutcome {
	return func(api.LocalDeleteTask) api.AckOutcome { return outcome }
}

// ackResp acks tasks with the outcomes decide chooses and returns how many
// tasks the ack dropped.
func (h *fakeHolder) ackResp(tasks []api.LocalDeleteTask, decide func(api.LocalDeleteTask) api.AckOutcome) (int, error) {
	if len(tasks) == 0 {
		return 0, nil
	}
	results := make([]api.TaskResult, len(tasks))
	for i, task := range tasks {
		results[i] = api.TaskResult{TaskID: task.ID, Key: task.Key, Incarnation: task.Incarnation, Outcome: decide(task)}
	}
	resp, err := h.tc.link().Ack(context.Background(), &api.AckTasksRequest{Segment: h.Seg, MountEpoch: h.Epoch, Results: results})
	return resp.Dropped, err
}

// ack acks and fails the test on an error.
func (h *fakeHolder) ack(t testing.TB, tasks []api.LocalDeleteTask, decide func(api.LocalDeleteTask) api.AckOutcome) int {
	t.Helper()
	n, err := h.ackResp(tasks, decide)
	if err != nil {
		t.Fatalf("ack %s: %v", h.Seg, err)
	}
	return n
}

// reconcile reports refs as the holder's live set; the answer names those
// the leader says to tombstone.
func (h *fakeHolder) reconcile(refs []api.ObjectRef) ([]api.ObjectRef, error) {
	resp, err := h.tc.link().Reconcile(context.Background(), &api.ReconcileRequest{Segment: h.Seg, MountEpoch: h.Epoch, Objects: refs})
	return resp.NotLive, err
}

// evict asks the leader to drop the segment's replicas of refs.
func (h *fakeHolder) evict(refs []api.ObjectRef) ([]api.ObjectRef, error) {
	resp, err := h.tc.link().Evict(context.Background(), &api.EvictRequest{Segment: h.Seg, MountEpoch: h.Epoch, Refs: refs})
	return resp.Evicted, err
}

// follower is a fake holder's follow loop running in the background:
// long-poll fetch, then ack every fetched task with the chosen outcome.
type follower struct {
	mu      sync.Mutex
	fetched []api.LocalDeleteTask // every task delivered, in delivery order
	errs    []error
	stop    func()
}

// follow starts the follow loop; it stops at the end of the test or when
// stop is called.
func (h *fakeHolder) follow(t testing.TB, decide func(api.LocalDeleteTask) api.AckOutcome) *follower {
	f := &follower{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			resp, err := h.fetchResp(0, 200*time.Millisecond)
			if err == nil && len(resp.Tasks) > 0 {
				f.mu.Lock()
				f.fetched = append(f.fetched, resp.Tasks...)
				f.mu.Unlock()
				_, err = h.ackResp(resp.Tasks, decide)
			}
			if err != nil {
				f.mu.Lock()
				f.errs = append(f.errs, err)
				f.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	var once sync.Once
	f.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(f.stop)
	return f
}

// seen returns a copy of every task delivered so far.
func (f *follower) seen() []api.LocalDeleteTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.LocalDeleteTask(nil), f.fetched...)
}

// ports is this package's own range: test packages run as parallel
// processes, and two picking from one range could collide.
var ports = testport.Range{Lo: 20000, Hi: 26000}

func freeAddr(t testing.TB) string {
	t.Helper()
	return ports.Addr(t)
}

// masterLogs collects the masters' logs; they are printed when a test
// fails, and as they come with SEXTON_TEST_MASTER_LOG set.
func masterLogs() *testutil.SyncBuffer {
	b := &testutil.SyncBuffer{}
	if os.Getenv("SEXTON_TEST_MASTER_LOG") != "" {
		b.Tee = os.Stderr
	}
	return b
}

// putMany puts keys (one LOCAL_DISK replica each) in batches of
// MaxBatchPutItems.
func (tc *testCluster) putMany(t testing.TB, keys []string, size int64) {
	t.Helper()
	for start := 0; start < len(keys); start += api.MaxBatchPutItems {
		chunk := keys[start:min(start+api.MaxBatchPutItems, len(keys))]
		starts := &api.BatchPutStartRequest{}
		for _, k := range chunk {
			starts.Items = append(starts.Items, api.PutStartRequest{Key: k, Size: size, ReplicaNum: 1})
		}
		var sr api.BatchPutStartResponse
		if err := tc.call(api.MethodBatchPutStart, starts, &sr); err != nil {
			t.Fatalf("BatchPutStart: %v", err)
		}
		ends := &api.BatchPutEndRequest{}
		for i, r := range sr.Results {
			if r.Err != nil {
				t.Fatalf("BatchPutStart %q: %v", chunk[i], r.Err)
			}
			ends.Items = append(ends.Items, api.PutEndRequest{Key: chunk[i], Incarnation: r.Incarnation})
		}
		var er api.BatchPutEndResponse
		if err := tc.call(api.MethodBatchPutEnd, ends, &er); err != nil {
			t.Fatalf("BatchPutEnd: %v", err)
		}
		for _, r := range er.Results {
			if r.Err != nil {
				t.Fatalf("BatchPutEnd %q: %v", r.Key, r.Err)
			}
		}
	}
}

// removeMany removes keys with BatchRemove (at most MaxBatchKeys).
func (tc *testCluster) removeMany(t testing.TB, keys []string) {
	t.Helper()
	var resp api.BatchRemoveResponse
	if err := tc.call(api.MethodBatchRemove, &api.BatchRemoveRequest{Keys: keys}, &resp); err != nil {
		t.Fatalf("BatchRemove: %v", err)
	}
	for _, r := range resp.Results {
		if r.Err != nil {
			t.Fatalf("BatchRemove %q: %v", r.Key, r.Err)
		}
	}
}

// TestHarnessFollowsLeaderAcrossACrash exercises the harness end to end:
// a put and remove on a three-node cluster produce a task the fake holder
// fetches; after the leader is killed a new one is elected and the task,
// still pending, is fetched again and acked.
func TestHarnessFollowsLeaderAcrossACrash(t *testing.T) {
	tc := startCluster(t, 3)
	h := tc.mountHolder(t, "seg-a", "")
	ps := tc.put(t, "k", 10, 1)
	if ps.Replicas[0].Segment != h.Seg {
		t.Fatalf("placed on %v, want %s", ps.Replicas, h.Seg)
	}
	if got, err := tc.get("k"); err != nil || got.Incarnation != ps.Incarnation {
		t.Fatalf("get: %v %v", got, err)
	}
	if err := tc.remove("k"); err != nil {
		t.Fatal(err)
	}
	tasks := h.fetch(t, 0, 3*time.Second) // waits out the lease floor
	if len(tasks) != 1 || tasks[0].Key != "k" || tasks[0].Incarnation != ps.Incarnation {
		t.Fatalf("fetched %v, want the task of k", tasks)
	}
	old := tc.leaderIndex(t)
	tc.kill(old)
	if tc.node(old) != nil {
		t.Fatalf("killed node %d still listed as running", old)
	}
	if now := tc.leaderIndex(t); now == old {
		t.Fatalf("killed node %d is still the leader", old)
	}
	again := h.fetch(t, 0, 3*time.Second)
	if len(again) != 1 || again[0].ID != tasks[0].ID {
		t.Fatalf("after failover fetched %v, want the same task again", again)
	}
	if n := h.ack(t, again, ackAll(api.AckRemoved)); n != 1 {
		t.Fatalf("ack dropped %d tasks, want 1", n)
	}
	if rest := h.fetch(t, 0, 0); len(rest) != 0 {
		t.Fatalf("after the ack fetched %v", rest)
	}
}

// removeAndWait calls n's (asynchronous) Remove handler and waits for its
// answer.
func removeAndWait(n *Node, req *api.RemoveRequest) error {
	answered := make(chan error, 1)
	n.handleRemove(req, func(_ *api.Empty, err error) { answered <- err })
	return <-answered
}
