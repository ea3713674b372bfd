package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
)

// benchRaft times bare hashicorp/raft Applies on a three-node cluster laid
// out like sexton's (same timeouts, same log stores, TCP on loopback, one
// data dir per node), with a no-op FSM, so sexton's own cost can be read as
// a ratio against it.
func benchRaft(args []string) error {
	fs := newFlags("bench raft")
	n := fs.Int("n", 5000, "entries")
	clients := fs.Int("clients", 1, "concurrent proposers")
	size := fs.Int("size", 64, "entry size in bytes")
	store := fs.String("raft-log-store", "boltdb", "boltdb or wal")
	nodes := fs.Int("nodes", 3, "voters")
	if err := parseFlags(fs, args); err != nil {
		return usagef("%v", err)
	}
	dir, err := os.MkdirTemp("", "sexton-bench-raft-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var rafts []*raft.Raft
	var closers []func() error
	defer func() {
		for _, r := range rafts {
			_ = r.Shutdown().Error()
		}
		for _, c := range closers {
			_ = c()
		}
	}()
	var conf raft.Configuration
	type nodeParts struct {
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
		trans  *raft.NetworkTransport
		cfg    *raft.Config
	}
	parts := make([]nodeParts, *nodes)
	quiet := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: io.Discard})
	for i := range parts {
		id := fmt.Sprintf("b%d", i)
		d := filepath.Join(dir, id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		c := raft.DefaultConfig()
		c.LocalID = raft.ServerID(id)
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout, c.CommitTimeout = 500*time.Millisecond, 500*time.Millisecond, 250*time.Millisecond, 5*time.Millisecond
		c.BatchApplyCh = true
		c.Logger = quiet
		p := nodeParts{cfg: c}
		switch *store {
		case "wal":
			if err := os.MkdirAll(filepath.Join(d, "raft-wal"), 0o755); err != nil {
				return err
			}
			w, err := raftwal.Open(filepath.Join(d, "raft-wal"))
			if err != nil {
				return err
			}
			closers = append(closers, w.Close)
			p.logs, p.stable = w, w
		default:
			b, err := raftboltdb.NewBoltStore(filepath.Join(d, "raft.db"))
			if err != nil {
				return err
			}
			closers = append(closers, b.Close)
			p.logs, p.stable = b, b
		}
		if p.snaps, err = raft.NewFileSnapshotStoreWithLogger(d, 1, quiet); err != nil {
			return err
		}
		if p.trans, err = raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 5, 5*time.Second, quiet); err != nil {
			return err
		}
		closers = append(closers, p.trans.Close)
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: c.LocalID, Address: p.trans.LocalAddr()})
		parts[i] = p
	}
	for _, p := range parts {
		if err := raft.BootstrapCluster(p.cfg, p.logs, p.stable, p.snaps, p.trans, conf); err != nil {
			return err
		}
		r, err := raft.NewRaft(p.cfg, noopFSM{}, p.logs, p.stable, p.snaps, p.trans)
		if err != nil {
			return err
		}
		rafts = append(rafts, r)
	}
	var leader *raft.Raft
	for deadline := time.Now().Add(10 * time.Second); leader == nil; {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				leader = r
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench raft: no leader elected in 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	entry := make([]byte, *size)
	_, err = runParallel(fmt.Sprintf("raft apply (%s, %d B entries)", *store, *size), *n, *clients, 1, func(int) error {
		return leader.Apply(entry, 10*time.Second).Error()
	})
	return err
}

type noopFSM struct{}

func (noopFSM) Apply(*raft.Log) any                 { return nil }
func (noopFSM) Snapshot() (raft.FSMSnapshot, error) { return noopSnap{}, nil }
func (noopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type noopSnap struct{}

func (noopSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (noopSnap) Release()                          {}
