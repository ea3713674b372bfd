package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/master"
	"sexton/raftio"
)

// benchRaft times bare hashicorp/raft Applies on a three-node cluster laid
// out like sexton's: one process per node (the followers are child
// processes of this one), the same timeouts and log stores, TCP on
// loopback, one data dir per node, and a no-op FSM. The proposer runs in
// the leader's process, so what `bench remove` adds on top is sexton's own
// cost (client RPC, validation, batching, the fsm).
func benchRaft(args []string) error {
	fs := newFlags("bench raft")
	n := fs.Int("n", 5000, "entries")
	clients := fs.Int("clients", 1, "concurrent proposers")
	size := fs.Int("size", 64, "entry size in bytes")
	store := fs.String("raft-log-store", "", "boltdb or wal; unset, what a master picks for a new data dir (wal)")
	inProcess := fs.Bool("in-process", false, "run all three nodes in this process instead of one process each")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *store == "" {
		*store = raftio.LogStoreWAL // the nodes' data dirs are new: a master would pick wal
	}
	dir, err := os.MkdirTemp("", "sexton-bench-raft-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var addrs, peers []string
	for i := 0; i < 3; i++ {
		a, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		addrs = append(addrs, a)
		peers = append(peers, fmt.Sprintf("b%d=%s", i, a))
	}
	peerList := strings.Join(peers, ",")
	leader, err := startBareNode(filepath.Join(dir, "b0"), "b0", addrs[0], peerList, *store, false)
	if err != nil {
		return err
	}
	defer leader.close()
	for i := 1; i < 3; i++ {
		id, d := fmt.Sprintf("b%d", i), filepath.Join(dir, fmt.Sprintf("b%d", i))
		if *inProcess {
			f, err := startBareNode(d, id, addrs[i], peerList, *store, true)
			if err != nil {
				return err
			}
			defer f.close()
			continue
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(self, "bench", "raft-node", "--id", id, "--dir", d, "--raft-addr", addrs[i], "--peers", peerList, "--raft-log-store", *store)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe() // the child exits when this closes
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer func() { stdin.Close(); _ = cmd.Wait() }()
	}
	for deadline := time.Now().Add(15 * time.Second); leader.r.State() != raft.Leader; {
		if time.Now().After(deadline) {
			return fmt.Errorf("bench raft: this node did not become leader in 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Let the followers catch up with the bootstrap before timing.
	if err := leader.r.Barrier(10 * time.Second).Error(); err != nil {
		return err
	}
	layout := "3 processes"
	if *inProcess {
		layout = "1 process"
	}
	entry := make([]byte, *size)
	_, err = runParallel(fmt.Sprintf("bare raft apply (%s, %d B entries, %s)", *store, *size, layout), *n, *clients, 1, func(int) error {
		return leader.r.Apply(entry, 10*time.Second).Error()
	})
	return err
}

// benchRaftNode is one follower of `bench raft`, in its own process. Its
// election timeout is long so the parent's node wins the first election.
func benchRaftNode(args []string) error {
	fs := newFlags("bench raft-node")
	id := fs.String("id", "", "node id")
	dir := fs.String("dir", "", "data dir")
	addr := fs.String("raft-addr", "", "raft address")
	peers := fs.String("peers", "", "ID=ADDR,...")
	store := fs.String("raft-log-store", "", "boltdb or wal; unset, what a master picks for a new data dir (wal)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	node, err := startBareNode(*dir, *id, *addr, *peers, *store, true)
	if err != nil {
		return err
	}
	defer node.close()
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes away
	return nil
}

type bareNode struct {
	r       *raft.Raft
	closers []func() error
}

func (b *bareNode) close() {
	if b.r != nil {
		_ = b.r.Shutdown().Error()
	}
	for i := len(b.closers) - 1; i >= 0; i-- {
		_ = b.closers[i]()
	}
}

// startBareNode starts one hashicorp/raft node with a master's Raft
// configuration, log store, snapshot store and transport
// (master.RaftConfig, OpenLogStore, OpenSnapshotStore, NewRaftTransport),
// bootstrapped with peers.
func startBareNode(dir, id, addr, peers, storeKind string, follower bool) (*bareNode, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: io.Discard})
	c := master.RaftConfig(master.Config{ID: id, Logger: quiet})
	if follower {
		c.HeartbeatTimeout, c.ElectionTimeout = 10*time.Second, 10*time.Second
	}
	b := &bareNode{}
	store, err := raftio.OpenLogStore(dir, raftio.LogStoreOptions{Kind: storeKind}, quiet)
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, store.Close)
	logs, stable := store.Logs, store.Stable
	snaps, err := raftio.OpenSnapshotStore(dir, quiet)
	if err != nil {
		b.close()
		return nil, err
	}
	trans, err := raftio.NewRaftTransport(addr, quiet)
	if err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, trans.Close)
	var conf raft.Configuration
	for _, p := range strings.Split(peers, ",") {
		pid, paddr, _ := strings.Cut(p, "=")
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(pid), Address: raft.ServerAddress(paddr)})
	}
	if err := raft.BootstrapCluster(c, logs, stable, snaps, trans, conf); err != nil {
		b.close()
		return nil, err
	}
	if b.r, err = raft.NewRaft(c, noopFSM{}, raftio.CachedLogs(logs), stable, snaps, trans); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

type noopFSM struct{}

func (noopFSM) Apply(*raft.Log) any                 { return nil }
func (noopFSM) Snapshot() (raft.FSMSnapshot, error) { return noopSnap{}, nil }
func (noopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type noopSnap struct{}

func (noopSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (noopSnap) Release()                          {}
