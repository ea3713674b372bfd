package raftio

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/raftio/raftiotest"
)

func newTestGuard(t *testing.T, full *atomic.Bool) *StoreGuard {
	t.Helper()
	inner := raft.NewInmemStore()
	fs := &raftiotest.FaultyStore{LogStore: inner, StableStore: inner, Full: full, AllWrites: true}
	g := NewStoreGuard(fs, fs, t.TempDir(), hclog.NewNullLogger(), nil)
	g.probeInterval = 10 * time.Millisecond
	g.probe = func() error {
		if full.Load() {
			return raftiotest.ErrInjectedENOSPC
		}
		return nil
	}
	t.Cleanup(g.Close)
	return g
}

// A failed term write is never returned (raft would panic): it waits for
// a probe to succeed and is written then.
func TestStoreGuardTermWriteWaitsForSpace(t *testing.T) {
	g, full, done := parkTermWrite(t)
	select {
	case err := <-done:
		t.Fatalf("term write returned %v while the store cannot write", err)
	case <-time.After(200 * time.Millisecond):
	}
	if cannot, _, err := g.State(); !cannot || !errors.Is(err, raftiotest.ErrInjectedENOSPC) {
		t.Fatalf("state: cannot write %v, %v", cannot, err)
	}
	full.Store(false)
	awaitParked(t, done, "the term write, after space returned,")
	if v, _ := g.GetUint64(keyCurrentTerm); v != 4 {
		t.Fatalf("term on disk %d, want 4", v)
	}
	if cannot, _, _ := g.State(); cannot {
		t.Fatalf("still cannot write after the probe succeeded")
	}
}

// Shutting down releases a parked term write without an error, and every
// later write is refused, so nothing that depends on the unwritten term
// reaches the disk.
func TestStoreGuardCloseReleasesParkedTermWrite(t *testing.T) {
	g, full, done := parkTermWrite(t)
	time.Sleep(50 * time.Millisecond)
	g.Close()
	awaitParked(t, done, "the term write, released by close (raft would panic on an error),")
	full.Store(false)
	if err := g.StoreLogs([]*raft.Log{{Index: 1, Term: 4}}); !errors.Is(err, errStoreAbandoned) {
		t.Fatalf("log append after an unwritten term: %v, want refused", err)
	}
	if v, _ := g.GetUint64(keyCurrentTerm); v != 0 {
		t.Fatalf("term on disk %d, want 0 (never written)", v)
	}
}

// A term below the one on disk is never written (terms only grow).
func TestStoreGuardTermNeverGoesBack(t *testing.T) {
	var full atomic.Bool
	g := newTestGuard(t, &full)
	for _, v := range []uint64{5, 3} {
		if err := g.SetUint64(keyCurrentTerm, v); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := g.GetUint64(keyCurrentTerm); v != 5 {
		t.Fatalf("term on disk %d, want 5", v)
	}
}

// While the store cannot write, this node asks nobody for a pre-vote and
// counts it refused, so it never goes on to raise its term.
func TestPreVoteGateRefusesWhileStoreCannotWrite(t *testing.T) {
	var full atomic.Bool
	g := newTestGuard(t, &full)
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	gate := preVoteGate{NetworkTransport: trans, g: g}
	nobody := raft.ServerAddress(freeAddr(t)) // nothing listens there
	var resp raft.RequestPreVoteResponse
	if err := gate.RequestPreVote("peer", nobody, &raft.RequestPreVoteRequest{Term: 7}, &resp); err == nil {
		t.Fatalf("a healthy node's pre-vote did not go to the peer")
	}
	full.Store(true)
	g.failed("store_logs", raftiotest.ErrInjectedENOSPC)
	resp = raft.RequestPreVoteResponse{Granted: true}
	if err := gate.RequestPreVote("peer", nobody, &raft.RequestPreVoteRequest{Term: 7}, &resp); err != nil || resp.Granted || resp.Term != 7 {
		t.Fatalf("pre-vote while the store cannot write: %v, %+v; want refused without asking", err, resp)
	}
}

// awaitParked waits for a parked write's result: it must come within 5 s
// and be nil.
func awaitParked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s returned %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s is still parked", what)
	}
}

// parkTermWrite is a guard over a store that cannot write, with a write of
// term 4 started on it; done answers the write's result.
func parkTermWrite(t *testing.T) (*StoreGuard, *atomic.Bool, <-chan error) {
	t.Helper()
	full := &atomic.Bool{}
	g := newTestGuard(t, full)
	full.Store(true)
	done := make(chan error, 1)
	go func() { done <- g.SetUint64(keyCurrentTerm, 4) }()
	return g, full, done
}
