package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/internal/testutil"
)

// The nemesis test runs three masters and two holders from the built
// binary with a fault proxy (faultproxy_test.go) on every directed link,
// lets clients run put/get/rm/batch-rm on a few keys through the real
// client while faults drawn from a printed seed hit the cluster, and then
// checks three things: porcupine finds the history linearizable (one
// register per key, an operation of unknown outcome open-ended), every
// key whose remove was acknowledged is gone from every holder's disk once
// the tasks drain (holder inspect on copies of the directories, operator
// fsck), and the live keys read back byte-identical.
//
// Beside the clients, prefix-delete jobs run in rounds on keys of their
// own (SEXTON_NEMESIS_JOBS=off leaves them out); their removals are part
// of the checked history (jobmodel_test.go). Half the seeds first rebuild
// the cluster from its holders (nemesis_operator_test.go), so the
// operator faults then rerun that rebuild under the clients.
//
// SEXTON_NEMESIS_SEED replays a schedule, SEXTON_NEMESIS_DURATION sets
// how long faults run (make jepsen: 10m), SEXTON_NEMESIS_FAULTS limits
// the kinds (comma-separated names from nemesisKinds).

// nemesisKinds are the faults the schedule draws from.
var nemesisKinds = []string{
	"kill-leader",        // SIGKILL the leader, restart it
	"kill-follower",      // SIGKILL a follower, restart it
	"pause-master",       // SIGSTOP a master (leader half the time) longer than the election timeout, SIGCONT
	"partition-minority", // one master cut from the other two both ways (Raft and its RPC)
	"isolate-leader",     // the leader cut from its peers on Raft only: clients still reach it
	"one-way",            // the leader cannot reach its peers; they reach it
	"cut-rpc",            // nobody reaches the leader's RPC address: answers already on their way are lost
	"kill-holder",        // SIGKILL a holder, restart it
	"cut-holder",         // clients cannot reach a holder
	"disk-freeze",        // a holder's files made immutable (chattr +i), then restored
	"restore-old",        // operator snapshot save, clients go on, then a restore of that older file without --allow-rollback: refused
	"rebuild-live",       // operator rebuild against the serving cluster: refused (its state is not fresh)
}

type nemesisCluster struct {
	*cluster
	raftLinks map[[2]int]*faultProxy // [from, to]: the proxy from dials to reach to's Raft
	rpc       []*faultProxy          // in front of each master's RPC address
	holders   []*holderNode
	holderRPC []*faultProxy // in front of each holder's data address

	chattrOK bool
	// rebuilt: the cluster was rebuilt from its holders before the run
	// (rebuildUnderNemesis), so rebuild-live is a rerun, not a refusal.
	rebuilt bool

	// The DFS root the masters and the DFS client share
	// (nemesis_dfs_test.go).
	dfsRoot string
	dfsEnv  []string
	dfs     *nemesisDFSState
}

// startNemesisCluster starts the masters, each with its own peers list:
// itself at its real Raft address, every other master at the proxy of
// that directed link. Each node bootstraps from its own list; the
// bootstrap entries differ only in addresses, and a configuration is
// replaced only by a membership change or a snapshot install, which the
// test does not cause (snapshots are far beyond a run's log).
func startNemesisCluster(t *testing.T) *nemesisCluster {
	t.Helper()
	const n = 3
	base := nemesisTempDir(t)
	nc := &nemesisCluster{cluster: &cluster{t: t}, raftLinks: map[[2]int]*faultProxy{}, dfsRoot: filepath.Join(base, "dfs"), dfs: newNemesisDFSState()}
	if err := os.Mkdir(nc.dfsRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	nc.dfsEnv = dfsEnv(nc.dfsRoot, "MOONCAKE_DFS_FSYNC=1")
	for i := 0; i < n; i++ {
		m := &masterNode{id: fmt.Sprintf("m%d", i+1), raftAddr: freePort(t), rpcAddr: freePort(t), httpAddr: freePort(t)}
		m.dir = filepath.Join(base, m.id)
		nc.nodes = append(nc.nodes, m)
		nc.rpc = append(nc.rpc, startFaultProxy(t, "rpc-"+m.id, m.rpcAddr))
	}
	for i, a := range nc.nodes {
		for j, b := range nc.nodes {
			if i != j {
				nc.raftLinks[[2]int{i, j}] = startFaultProxy(t, "raft-"+a.id+"-"+b.id, b.raftAddr)
			}
		}
	}
	for i, m := range nc.nodes {
		var peers []string
		for j, o := range nc.nodes {
			addr := o.raftAddr
			if i != j {
				addr = nc.raftLinks[[2]int{i, j}].addr
			}
			peers = append(peers, o.id+"="+addr)
		}
		args := []string{"master", "--id", m.id, "--data-dir", m.dir, "--raft-addr", m.raftAddr,
			"--rpc-addr", m.rpcAddr, "--rpc-advertise", nc.rpc[i].addr, "--http-addr", m.httpAddr,
			"--peers", strings.Join(peers, ","), "--bootstrap", "--log-level", nemesisLogLevel(),
			// A put whose client vanished is revoked (and its bytes
			// tasked) soon, so the disk check need not wait 10 minutes.
			"--put-discard-timeout", "10s"}
		m.proc = startProc(t, m.id, filepath.Join(base, m.id+".log"), nc.dfsEnv, args...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range nc.nodes {
				t.Logf("---- log of %s (last 3000 bytes) ----\n%s", m.id, tail(m.logText(), 3000))
			}
		}
	})
	nc.waitLeader(30 * time.Second)

	nc.chattrOK = chattrWorks(t, base)
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("h%d", i+1)
		h := &holderNode{name: name, dir: filepath.Join(base, name), addr: freePort(t), pool: "nem"}
		px := startFaultProxy(t, "data-"+name, h.addr)
		args := []string{"holder", "--masters", strings.Join(nc.proxiedMasters(), ","), "--dir", h.dir, "--rpc-addr", h.addr,
			"--advertise", px.addr, "--pool", h.pool, "--client-id", h.name, "--capacity", "1GiB", "--log-level", nemesisLogLevel()}
		h.proc = startProc(t, name, h.dir+".log", nil, args...)
		t.Cleanup(func() { unfreeze(h.dir) }) // before the temp dir's removal
		nc.waitHolderMounted(t, h)
		nc.holders = append(nc.holders, h)
		nc.holderRPC = append(nc.holderRPC, px)
	}
	return nc
}

// nemesisTempDir is a temporary directory on a filesystem where chattr
// works: /tmp may be a tmpfs, which has no immutable flag.
// nemesisLogLevel is the servers' log level: info keeps a ten-minute run's
// logs small; SEXTON_NEMESIS_LOG=debug for a replay.
func nemesisLogLevel() string {
	if l := os.Getenv("SEXTON_NEMESIS_LOG"); l != "" {
		return l
	}
	return "info"
}

func nemesisTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(os.Getenv("SEXTON_NEMESIS_DIR"), "sexton-nemesis-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unfreeze(dir)
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("nemesis directories kept in %s", dir)
		}
	})
	return dir
}

func chattrWorks(t *testing.T, dir string) bool {
	f := filepath.Join(dir, ".chattr-probe")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f)
	if out, err := exec.Command("chattr", "+i", f).CombinedOutput(); err != nil {
		t.Logf("disk-freeze fault SKIPPED: chattr +i on %s: %v %s (set SEXTON_NEMESIS_DIR to a directory on ext4/xfs, as root)", dir, err, strings.TrimSpace(string(out)))
		return false
	}
	unfreeze(f)
	return true
}

func freeze(dir string) error {
	out, err := exec.Command("chattr", "-R", "+i", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chattr +i %s: %v %s", dir, err, out)
	}
	return nil
}

// unfreeze restores what freeze did; it runs in cleanup whatever happened,
// since an immutable file left behind defeats even root's rm -rf.
func unfreeze(dir string) { _ = exec.Command("chattr", "-R", "-i", dir).Run() }

func (nc *nemesisCluster) proxiedMasters() []string {
	var out []string
	for _, p := range nc.rpc {
		out = append(out, p.addr)
	}
	return out
}

// findLeader is the master that says it leads, or -1; it does not fail
// the test (the nemesis goroutine may not).
func (nc *nemesisCluster) findLeader() int {
	for i, m := range nc.nodes {
		if !m.running() {
			continue
		}
		if st, err := nc.status(m); err == nil && st.RaftState == "Leader" {
			return i
		}
	}
	return -1
}

// signalNoWait sends sig to p's current process, if it runs.
func signalNoWait(p *proc, sig syscall.Signal) {
	if cmd, _ := p.live(); cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// isolate sets every Raft link into and out of master i (and, with rpc,
// its RPC proxy) to s.
func (nc *nemesisCluster) isolate(i int, s linkState, rpc bool) {
	for k, p := range nc.raftLinks {
		if k[0] == i || k[1] == i {
			p.set(s)
		}
	}
	if rpc {
		nc.rpc[i].set(s)
	}
}

// healAll undoes every fault: links pass, paused masters continue, holder
// files are writable again, and a process that died is started again.
func (nc *nemesisCluster) healAll() {
	for _, p := range nc.raftLinks {
		p.set(linkPass)
	}
	for _, p := range append(append([]*faultProxy{}, nc.rpc...), nc.holderRPC...) {
		p.set(linkPass)
	}
	for _, m := range nc.nodes {
		signalNoWait(m.proc, syscall.SIGCONT)
	}
	for _, h := range nc.holders {
		unfreeze(h.dir)
	}
	for _, m := range nc.nodes {
		if !m.running() {
			m.proc.start()
		}
	}
	for _, h := range nc.holders {
		if !h.running() {
			h.proc.start()
		}
	}
}

// nemesisRun is one schedule: the faults injected, by kind.
type nemesisRun struct {
	nc    *nemesisCluster
	rng   *rand.Rand
	kinds []string

	mu     sync.Mutex
	counts map[string]int
	events []string
}

func (r *nemesisRun) note(kind, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[kind]++
	r.events = append(r.events, time.Now().Format("15:04:05.000")+" "+what)
}

// dur is a random duration in [lo, hi).
func (r *nemesisRun) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

// run injects faults until stop closes, one at a time: a quiet gap, a
// fault held for a while, its repair.
func (r *nemesisRun) run(stop <-chan struct{}) {
	sleep := func(d time.Duration) bool {
		select {
		case <-stop:
			return false
		case <-time.After(d):
			return true
		}
	}
	nc := r.nc
	for {
		if !sleep(r.dur(time.Second, 3*time.Second)) {
			return
		}
		kind := r.kinds[r.rng.IntN(len(r.kinds))]
		hold := r.dur(time.Second, 4*time.Second)
		mode := linkDrop
		if r.rng.IntN(2) == 0 {
			mode = linkStall
		}
		leader := nc.findLeader()
		other := r.rng.IntN(len(nc.nodes))
		// cutFor sets links to mode for hold, noting it with format (of
		// name, the mode and hold), and lets them through again.
		cutFor := func(links func(linkState), name, format string) {
			links(mode)
			r.note(kind, fmt.Sprintf(format, name, mode, hold))
			sleep(hold)
			links(linkPass)
		}
		// isolateFor cuts node i off (its client RPC too when rpc).
		isolateFor := func(i int, rpc bool, format string) {
			cutFor(func(s linkState) { nc.isolate(i, s, rpc) }, nc.nodes[i].id, format)
		}
		switch kind {
		case "kill-leader", "kill-follower":
			i := leader
			if kind == "kill-follower" || i < 0 {
				i = (max(leader, 0) + 1 + r.rng.IntN(2)) % len(nc.nodes)
			}
			nc.nodes[i].kill()
			r.note(kind, fmt.Sprintf("%s: SIGKILL %s for %v", kind, nc.nodes[i].id, hold))
			sleep(hold)
			nc.nodes[i].proc.start()
		case "pause-master":
			i := other
			if r.rng.IntN(2) == 0 && leader >= 0 {
				i = leader
			}
			signalNoWait(nc.nodes[i].proc, syscall.SIGSTOP)
			r.note(kind, fmt.Sprintf("pause: SIGSTOP %s for %v", nc.nodes[i].id, hold+time.Second))
			sleep(hold + time.Second) // above the 500ms election timeout
			signalNoWait(nc.nodes[i].proc, syscall.SIGCONT)
		case "partition-minority":
			isolateFor(other, true, "partition: %s alone (%s) for %v")
		case "isolate-leader":
			if leader < 0 {
				continue
			}
			isolateFor(leader, false, "isolate leader %s on Raft (%s) for %v")
		case "one-way":
			if leader < 0 {
				continue
			}
			cutFor(func(s linkState) {
				for k, p := range nc.raftLinks {
					if k[0] == leader {
						p.set(s)
					}
				}
			}, nc.nodes[leader].id, "one-way: %s cannot reach its peers (%s) for %v")
		case "cut-rpc":
			if leader < 0 {
				continue
			}
			cutFor(nc.rpc[leader].set, nc.nodes[leader].id, "RPC of leader %s cut (%s) for %v")
		case "kill-holder":
			h := nc.holders[r.rng.IntN(len(nc.holders))]
			h.kill()
			r.note(kind, fmt.Sprintf("SIGKILL holder %s for %v", h.name, hold))
			sleep(hold)
			h.proc.start()
		case "cut-holder":
			i := r.rng.IntN(len(nc.holders))
			cutFor(nc.holderRPC[i].set, nc.holders[i].name, "clients cut from holder %s (%s) for %v")
		case "disk-freeze":
			h := nc.holders[r.rng.IntN(len(nc.holders))]
			if err := freeze(h.dir); err != nil {
				unfreeze(h.dir)
				r.note("disk-freeze-failed", err.Error())
				continue
			}
			r.note(kind, fmt.Sprintf("chattr +i on holder %s's files for %v", h.name, hold))
			sleep(hold)
			unfreeze(h.dir)
		case "restore-old", "rebuild-live":
			r.operatorFault(kind, hold, sleep)
		}
		// A holder may exit on a refused write, by design: fail closed.
		// Whatever died is started again before the next fault.
		nc.healAll()
	}
}

// samplePending logs, every period until stop closes, the delete tasks
// pending and the term as a running master sees them: a backlog that only
// grows means holders stopped draining.
func (nc *nemesisCluster) samplePending(t *testing.T, stop <-chan struct{}, period time.Duration) (wait func()) {
	return testutil.Every(period, stop, func() {
		if i := nc.findLeader(); i >= 0 {
			if st, err := nc.status(nc.nodes[i]); err == nil {
				t.Logf("sample: leader %s term %d epoch %d, %d tasks pending, %d objects", st.NodeID, st.Term, st.MasterEpoch, st.PendingTasks, st.Objects)
			}
		}
	})
}

// nemesisValue is the body a put writes for value id v: a few KiB that
// only v produces, so a read names the put it saw and shows whether its
// bytes are intact.
func nemesisValue(v string) []byte {
	n := 1024 + len(v)*97%3072
	return []byte(strings.Repeat(v+";", n/(len(v)+1)+1))
}

// nemesisWorkload runs clients through the proxies until stop closes:
// put, get, rm and a two-key batch rm.
func nemesisWorkload(t *testing.T, nc *nemesisCluster, h *history, clients int, keys []string, seed uint64, stop <-chan struct{}) (corrupt *atomic.Int64, wait func()) {
	corrupt = &atomic.Int64{}
	failures := &errorTally{counts: map[string]int{}}
	t.Cleanup(func() { t.Logf("operations that failed definitely, by error code: %v", failures.counts) })
	wait = testutil.RunWorkers(clients, stop, func(w int) (func(n int) bool, func()) {
		// Half the clients give up sooner than most faults last, so
		// outcomes the client cannot know (recorded open-ended) are
		// part of the history; the other half outlast them.
		timeout := 15 * time.Second
		if w%2 == 0 {
			timeout = 3 * time.Second
		}
		cl, err := client.New(client.Config{Masters: nc.proxiedMasters(), Timeout: timeout, AttemptTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
		return func(n int) bool {
			key := keys[rng.IntN(len(keys))]
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			call := time.Now()
			switch r := rng.IntN(10); {
			case r < 4:
				v := fmt.Sprintf("c%d-%d", w, n)
				_, err := cl.Put(ctx, key, nemesisValue(v), client.PutOptions{Pool: "nem", Replicas: 1 + rng.IntN(2)})
				out := putOutcome(err)
				if out == "" {
					failures.add("put", err)
				}
				h.record(w, regOp{Kind: "put", Key: key, Value: v}, call, regOut{Outcome: out})
			case r < 7:
				body, _, err := cl.Get(ctx, key)
				out := getOutcome(err)
				if out == "" {
					failures.add("get", err)
				}
				v := ""
				if out == "ok" {
					v, _, _ = strings.Cut(string(body), ";")
					if string(nemesisValue(v)) != string(body) {
						corrupt.Add(1)
						t.Errorf("get %s: %d bytes that no put wrote (starting %q)", key, len(body), tail(string(body), 40))
					}
				}
				h.record(w, regOp{Kind: "get", Key: key}, call, regOut{Outcome: out, Value: v})
			case r < 9:
				err := cl.Remove(ctx, key)
				h.record(w, regOp{Kind: "rm", Key: key}, call, regOut{Outcome: clientOutcome(err)})
			default:
				other := keys[(slices.Index(keys, key)+1+rng.IntN(len(keys)-1))%len(keys)]
				res, err := cl.BatchRemove(ctx, []string{key, other}, nil)
				for i, k := range []string{key, other} {
					out := clientOutcome(err)
					if out == "absent" {
						out = ""
					}
					if err == nil && i < len(res) {
						out = clientOutcome(keyResultErr(res[i]))
					}
					h.record(w, regOp{Kind: "rm", Key: k}, call, regOut{Outcome: out})
				}
			}
			cancel()
			return true
		}, cl.Close
	})
	return corrupt, wait
}

// errorTally counts definite failures by operation and error code.
type errorTally struct {
	mu     sync.Mutex
	counts map[string]int
}

func (e *errorTally) add(op string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts[op+"/"+string(api.CodeOf(err))]++
}

func keyResultErr(r api.KeyResult) error {
	if r.Err == nil {
		return nil
	}
	return r.Err
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return d
}

func TestNemesisLinearizable(t *testing.T) {
	duration := envDuration(t, "SEXTON_NEMESIS_DURATION", 40*time.Second)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEXTON_NEMESIS_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("SEXTON_NEMESIS_SEED=%q: %v", s, err)
		}
	}
	t.Logf("nemesis seed %d (SEXTON_NEMESIS_SEED=%d replays the schedule), faults for %v", seed, seed, duration)

	nc := startNemesisCluster(t)
	kinds := slices.Clone(nemesisKinds)
	if s := os.Getenv("SEXTON_NEMESIS_FAULTS"); s != "" {
		kinds = strings.Split(s, ",")
	}
	if !nc.chattrOK {
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "disk-freeze" })
	}
	run := &nemesisRun{nc: nc, rng: rand.New(rand.NewPCG(seed, 0)), kinds: kinds, counts: map[string]int{}}

	keys := []string{"nem/a", "nem/b", "nem/c", "nem/d", "nem/e"}
	h := newHistory()
	// Half the seeds run on a cluster rebuilt from its holders first;
	// SEXTON_NEMESIS_REBUILD=on|off chooses.
	rebuild := seed%2 == 0
	switch os.Getenv("SEXTON_NEMESIS_REBUILD") {
	case "on":
		rebuild = true
	case "off":
		rebuild = false
	}
	var preKeys []string
	if rebuild {
		nc.rebuildUnderNemesis(t, h)
		preKeys = nemesisPreKeys
	}
	stopWork := make(chan struct{})
	corrupt, waitWork := nemesisWorkload(t, nc, h, 5, keys, seed, stopWork)
	waitDFS := nemesisDFSWorkload(t, nc, seed, stopWork)
	waitJobs := func() {}
	if os.Getenv("SEXTON_NEMESIS_JOBS") != "off" {
		waitJobs = nemesisPrefixJobs(t, nc, h, seed, stopWork)
	}
	stopNemesis := make(chan struct{})
	nemesisDone := make(chan struct{})
	go func() { defer close(nemesisDone); run.run(stopNemesis) }()
	waitSamples := nc.samplePending(t, stopNemesis, 15*time.Second)
	time.Sleep(duration)
	close(stopNemesis)
	<-nemesisDone
	waitSamples()
	nc.healAll()
	// Clients go on a little on the healed cluster, then stop.
	time.Sleep(3 * time.Second)
	close(stopWork)
	waitWork()
	waitDFS()
	waitJobs()
	t.Logf("faults: %v", run.events)
	nc.waitLeader(60 * time.Second)
	for _, hn := range nc.holders {
		nc.waitHolderMounted(t, hn)
	}

	// A final read of every key after the heal, part of the history.
	final, err := client.New(client.Config{Masters: nc.proxiedMasters(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	live := map[string]string{}
	for _, k := range slices.Concat(keys, nemesisJobKeys, preKeys) {
		for attempt := 0; ; attempt++ {
			ctx, cancel := ctxT(20 * time.Second)
			call := time.Now()
			body, _, err := final.Get(ctx, k)
			cancel()
			out := clientOutcome(err)
			if out == "ok" || out == "absent" {
				v, _, _ := strings.Cut(string(body), ";")
				if out == "ok" {
					if string(nemesisValue(v)) != string(body) {
						corrupt.Add(1)
						t.Errorf("final get %s: bytes no put wrote", k)
					}
					live[k] = v
				}
				h.record(1000, regOp{Kind: "get", Key: k}, call, regOut{Outcome: out, Value: v})
				break
			}
			if attempt == 10 {
				t.Fatalf("final get %s keeps failing: %v", k, err)
			}
			time.Sleep(time.Second)
		}
	}

	if rebuild {
		// A last rerun with the DFS root on the healed cluster adopts
		// nothing new and brings back no removed DFS key.
		out, err := runCLIErr("operator", "rebuild", "--masters="+strings.Join(nc.proxiedMasters(), ","), "--dfs-root="+nc.dfsRoot, "--timeout=30s")
		t.Logf("final rebuild rerun with --dfs-root: %v %s", err, lastLine(out))
		if n := rerunAdopted(out); n > 0 {
			t.Errorf("the final rerun adopted %d objects: every holder and the DFS root were scanned by the first rebuild, so each was the serving cluster's own copy: %s", n, lastLine(out))
		}
	}
	nc.dfsCheck(t, "after the run")
	t.Logf("DFS operations: %v", nc.dfs.ops)

	verdict := "linearizable"
	defer func() {
		t.Logf("NEMESIS SUMMARY seed=%d duration=%v rebuilt=%v\n  operations: %d recorded (outcomes %v; jobrm: a prefix job's removal of one key)\n  indeterminate: %d\n  faults injected: %v\n  corrupt reads: %d\n  checker: %s\n  acknowledged removes checked on disk: %d",
			seed, duration, rebuild, len(h.ops), h.counts, h.counts["put/unknown"]+h.counts["rm/unknown"], run.counts, corrupt.Load(), verdict, h.counts["rm/ok"])
	}()
	verdict = "NOT linearizable (or check timed out)"
	h.checkWithin(t, seed, envDuration(t, "SEXTON_NEMESIS_CHECK_TIMEOUT", 5*time.Minute))
	verdict = "linearizable"

	// The deletion promise: after the tasks drain, the holders' disks hold
	// live exactly the replicas of the objects the master lists; every
	// acknowledged remove's incarnation (and every overwritten one) is
	// gone. Then every key is removed and nothing stays live anywhere.
	// The backlog a long run leaves (holders tombstone more slowly than
	// clients remove while faults hit them) drains after the heal; give
	// it time in proportion.
	drain := max(2*time.Minute, duration/2)
	nc.waitDiskMatches(t, final, drain)
	fsckClean(t, nc.cluster)
	var toRemove []string
	for k := range live {
		toRemove = append(toRemove, k)
	}
	sort.Strings(toRemove)
	if len(toRemove) > 0 {
		ctx, cancel := ctxT(30 * time.Second)
		res, err := final.BatchRemove(ctx, toRemove, nil)
		cancel()
		if err != nil {
			t.Fatalf("final batch remove: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("final remove %s: %v", r.Key, r.Err)
			}
			h.counts["rm/ok"]++
		}
	}
	if n := nc.waitDiskMatches(t, final, drain); n != 0 {
		t.Fatalf("%d objects listed after removing every key", n)
	}
	fsckClean(t, nc.cluster)
	if corrupt.Load() > 0 {
		t.Fatalf("%d reads returned bytes no put wrote", corrupt.Load())
	}
}

// waitDiskMatches waits until no task is pending and the holders' copied
// directories hold live exactly as many records as the listed objects
// have replicas; it returns how many objects are listed.
func (nc *nemesisCluster) waitDiskMatches(t *testing.T, cl *client.Client, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	lastLog := time.Now()
	for {
		why := ""
		ctx, cancel := ctxT(20 * time.Second)
		objs, _, err := cl.List(ctx, "nem/", "", 1000)
		var tasks api.ListTasksResponse
		if err == nil {
			err = cl.Call(ctx, api.MethodListTasks, &api.ListTasksRequest{Limit: 1 << 20}, &tasks)
		}
		cancel()
		want := 0
		for _, o := range objs {
			want += len(o.Replicas)
		}
		switch {
		case err != nil:
			why = err.Error()
		case len(tasks.Tasks) > 0:
			why = fmt.Sprintf("%d tasks pending", len(tasks.Tasks))
		default:
			got, per, err := nc.liveOnDisk(t)
			if err == nil && got == want {
				t.Logf("disk check: %d objects, %d replicas live on disk %v, no task pending", len(objs), got, per)
				return len(objs)
			}
			why = fmt.Sprintf("live on disk %d %v, listed replicas %d (%v)", got, per, want, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("deletion promise broken after %v: %s", d, why)
		}
		if time.Since(lastLog) > 15*time.Second {
			t.Logf("disk check waiting: %s", why)
			lastLog = time.Now()
		}
		time.Sleep(time.Second)
	}
}

// liveOnDisk copies each holder's directory and counts its live records
// with `sexton holder inspect --json`.
func (nc *nemesisCluster) liveOnDisk(t *testing.T) (int, map[string]int, error) {
	total, per := 0, map[string]int{}
	for _, h := range nc.holders {
		cp := filepath.Join(t.TempDir(), h.name)
		if out, err := exec.Command("cp", "-a", h.dir, cp).CombinedOutput(); err != nil {
			return 0, nil, fmt.Errorf("copy %s: %v %s", h.dir, err, out)
		}
		out, err := exec.Command(binary, "holder", "inspect", "--json", cp).Output()
		if err != nil {
			return 0, nil, fmt.Errorf("holder inspect %s: %v %s", cp, err, out)
		}
		var rep struct {
			LiveObjects int      `json:"live_objects"`
			Problems    []string `json:"problems"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			return 0, nil, fmt.Errorf("holder inspect %s: %v", cp, err)
		}
		if len(rep.Problems) > 0 {
			return 0, nil, fmt.Errorf("holder inspect %s: problems %v", cp, rep.Problems)
		}
		per[h.name] = rep.LiveObjects
		total += rep.LiveObjects
		os.RemoveAll(cp)
	}
	return total, per, nil
}
