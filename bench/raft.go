package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/internal/loopback"
	"sexton/master"
	"sexton/raftio"
)

// Raft times bare hashicorp/raft Applies on a three-node cluster laid
// out like sexton's: one process per node (the followers are child
// processes of this one), the same timeouts and log stores, TCP on
// loopback, one data dir per node, and a no-op FSM. The proposer runs in
// the leader's process, so what `bench remove` adds on top is sexton's own
// cost (client RPC, validation, batching, the fsm).
//
// The followers run `sexton bench raft-node` (RaftNode) from this
// process's executable unless o.InProcess.
func Raft(e *Env, o RaftOptions) error {
	if o.Store == "" {
		o.Store = raftio.LogStoreWAL // the nodes' data dirs are new: a master would pick wal
	}
	dir, err := os.MkdirTemp("", "sexton-bench-raft-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var addrs, peers []string
	for i := 0; i < 3; i++ {
		a, err := loopback.Free()
		if err != nil {
			return err
		}
		addrs = append(addrs, a)
		peers = append(peers, fmt.Sprintf("b%d=%s", i, a))
	}
	peerList := strings.Join(peers, ",")
	leader, err := startBareNode(filepath.Join(dir, "b0"), "b0", addrs[0], peerList, o.Store, false)
	if err != nil {
		return err
	}
	defer leader.close()
	for i := 1; i < 3; i++ {
		id, d := fmt.Sprintf("b%d", i), filepath.Join(dir, fmt.Sprintf("b%d", i))
		if o.InProcess {
			f, err := startBareNode(d, id, addrs[i], peerList, o.Store, true)
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
		cmd := exec.Command(self, "bench", "raft-node", "--id", id, "--dir", d, "--raft-addr", addrs[i], "--peers", peerList, "--raft-log-store", o.Store)
		cmd.Stderr = e.Err
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
	if o.InProcess {
		layout = "1 process"
	}
	entry := make([]byte, o.Size)
	_, err = e.runParallel(fmt.Sprintf("bare raft apply (%s, %d B entries, %s)", o.Store, o.Size, layout), o.N, o.Clients, 1, func(int) error {
		return leader.r.Apply(entry, 10*time.Second).Error()
	})
	return err
}

// RaftOptions are bench raft's settings.
type RaftOptions struct {
	// N entries of Size bytes from Clients concurrent proposers.
	N, Clients, Size int
	// Store is the log store, boltdb or wal; empty: what a master picks
	// for a new data dir (wal).
	Store     string
	InProcess bool // all three nodes in this process
}

// RaftNodeOptions are one follower's settings in bench raft.
type RaftNodeOptions struct {
	ID, Dir, Addr, Peers, Store string
}

// RaftNode is one follower of `bench raft`, in its own process, until
// parent (its stdin) is closed. Its election timeout is long so the
// parent's node wins the first election.
func RaftNode(o RaftNodeOptions, parent io.Reader) error {
	node, err := startBareNode(o.Dir, o.ID, o.Addr, o.Peers, o.Store, true)
	if err != nil {
		return err
	}
	defer node.close()
	_, _ = io.Copy(io.Discard, parent) // until the parent goes away
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

type noopFSM struct{}

func (noopFSM) Apply(*raft.Log) any                 { return nil }
func (noopFSM) Snapshot() (raft.FSMSnapshot, error) { return noopSnap{}, nil }
func (noopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type noopSnap struct{}

func (noopSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (noopSnap) Release()                          {}
