package raftio

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/internal/testutil"
	"sexton/raftio/handshake"
	"sexton/raftio/raftiotest"
)

// refusals counts a stream's RaftAuth.Refused calls by side and reason.
type refusals struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *refusals) note(side, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[side+"/"+reason]++
}

func (r *refusals) get(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key]
}

func (r *refusals) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := 0
	for _, v := range r.n {
		t += v
	}
	return t
}

// testRaftEnd is one end of a Raft connection: a NetworkTransport on a
// raftStream with auth, answering every AppendEntries with success, as
// Raft server id.
type testRaftEnd struct {
	id    string
	trans *raft.NetworkTransport
	ref   *refusals
	peers *RaftPeers
}

func newTestRaftEnd(t *testing.T, id string, auth RaftAuth) *testRaftEnd {
	t.Helper()
	e := &testRaftEnd{id: id, ref: &refusals{}, peers: NewRaftPeers(id)}
	auth.Refused = e.ref.note
	auth.Peers = e.peers
	tr, err := NewRaftTransportWithAuth(ports.Addr(t), auth, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	e.trans = tr
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case rpc := <-tr.Consumer():
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = tr.Close()
		close(done)
		wg.Wait()
	})
	return e
}

// staticConf is a Raft configuration of voters, id → address.
func staticConf(servers map[string]string) func() (raft.Configuration, error) {
	var c raft.Configuration
	for id, addr := range servers {
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(addr)})
	}
	return func() (raft.Configuration, error) { return c, nil }
}

// meet gives every end the Raft configuration made of all of them.
func meet(ends ...*testRaftEnd) {
	servers := map[string]string{}
	for _, e := range ends {
		servers[e.id] = string(e.trans.LocalAddr())
	}
	for _, e := range ends {
		e.peers.Follow(staticConf(servers))
	}
}

// appendTo sends one AppendEntries from e to target.
func (e *testRaftEnd) appendTo(target *testRaftEnd) error {
	var resp raft.AppendEntriesResponse
	err := e.trans.AppendEntries("peer", target.trans.LocalAddr(), &raft.AppendEntriesRequest{Term: 7}, &resp)
	if err == nil && !resp.Success {
		return errors.New("answered without success")
	}
	return err
}

// TestRaftStreamAuthMatrix: an AppendEntries gets through only when both
// ends agree on the token and hold certificates of the same CA; every
// other pairing is refused, and the refusal is counted on the side that
// noticed it with the reason it noticed.
func TestRaftStreamAuthMatrix(t *testing.T) {
	ca, other := testutil.NewCAs(t)
	srvTLS, peerTLS := ca.MasterSource(t, "m1"), ca.MasterSource(t, "m2")
	// Certificates of the cluster's CA that do not name the dialer a
	// master of the configuration: a holder's, and a master's of
	// another id.
	holderTLS, strangerTLS := ca.Source(t, "", "h1"), ca.MasterSource(t, "m9")
	// A certificate of another CA, from a dialer that trusts the
	// cluster's CA: only the acceptor's check of the client certificate
	// can refuse it.
	foreign, err := other.Issue("intruder")
	if err != nil {
		t.Fatal(err)
	}
	foreign.CA = ca.CAFile
	foreignTLS := testutil.LoadTLS(t, foreign)

	short := 500 * time.Millisecond // how long a dialer waits for an open peer's challenge
	cases := []struct {
		name       string
		srv, cli   RaftAuth
		acceptWhy  string // refusal counted by the acceptor ("" = none)
		dialWhy    string // refusal counted by the dialer ("" = none)
		getThrough bool
	}{
		{name: "same token", srv: RaftAuth{Token: "t"}, cli: RaftAuth{Token: "t"}, getThrough: true},
		{name: "other token", srv: RaftAuth{Token: "t"}, cli: RaftAuth{Token: "u"}, acceptWhy: refuseToken, dialWhy: refuseToken},
		{name: "no token dialer", srv: RaftAuth{Token: "t"}, cli: RaftAuth{}, acceptWhy: refuseProtocol},
		// A token roll: an acceptor that takes the old and the new token
		// admits dialers proving either; one that dropped the old admits
		// its prover no more.
		{name: "rolling: dialer proves the new token", srv: RaftAuth{Token: "t", Accept: []string{"t", "u"}}, cli: RaftAuth{Token: "u", Accept: []string{"u", "t"}}, getThrough: true},
		{name: "rolling: dialer proves the old token", srv: RaftAuth{Token: "u", Accept: []string{"u", "t"}}, cli: RaftAuth{Token: "t", Accept: []string{"t", "u"}}, getThrough: true},
		{name: "rolled: old token dropped", srv: RaftAuth{Token: "u", Accept: []string{"u"}}, cli: RaftAuth{Token: "t", Accept: []string{"t", "u"}}, acceptWhy: refuseToken, dialWhy: refuseToken},
		{name: "no token acceptor", srv: RaftAuth{HandshakeTimeout: short}, cli: RaftAuth{Token: "t", HandshakeTimeout: short}, dialWhy: refuseTimeout},
		{name: "same CA", srv: RaftAuth{TLS: srvTLS}, cli: RaftAuth{TLS: peerTLS}, getThrough: true},
		// In TLS 1.3 the dialer's handshake is over before the acceptor
		// checks its certificate: the dialer learns of the refusal from
		// the alert on its first read, Raft's, not in Dial.
		{name: "foreign CA", srv: RaftAuth{TLS: srvTLS}, cli: RaftAuth{TLS: foreignTLS}, acceptWhy: refuseTLS},
		{name: "foreign CA with token", srv: RaftAuth{TLS: srvTLS, Token: "t"}, cli: RaftAuth{TLS: foreignTLS, Token: "t"}, acceptWhy: refuseTLS, dialWhy: refuseTLS},
		{name: "holder certificate", srv: RaftAuth{TLS: srvTLS}, cli: RaftAuth{TLS: holderTLS}, acceptWhy: refuseIdentity},
		{name: "holder certificate with token", srv: RaftAuth{TLS: srvTLS, Token: "t"}, cli: RaftAuth{TLS: holderTLS, Token: "t"}, acceptWhy: refuseIdentity, dialWhy: refuseClosed},
		{name: "master certificate of another id", srv: RaftAuth{TLS: srvTLS}, cli: RaftAuth{TLS: strangerTLS}, acceptWhy: refuseIdentity},
		{name: "acceptor with a holder certificate", srv: RaftAuth{TLS: holderTLS}, cli: RaftAuth{TLS: peerTLS}, dialWhy: refuseIdentity},
		{name: "no TLS dialer", srv: RaftAuth{TLS: srvTLS}, cli: RaftAuth{}, acceptWhy: refuseTLS},
		{name: "same CA and token", srv: RaftAuth{TLS: srvTLS, Token: "t"}, cli: RaftAuth{TLS: peerTLS, Token: "t"}, getThrough: true},
		{name: "same CA other token", srv: RaftAuth{TLS: srvTLS, Token: "t"}, cli: RaftAuth{TLS: peerTLS, Token: "u"}, acceptWhy: refuseToken, dialWhy: refuseToken},
		{name: "same CA no token", srv: RaftAuth{TLS: srvTLS, Token: "t"}, cli: RaftAuth{TLS: peerTLS}, acceptWhy: refuseProtocol},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := newTestRaftEnd(t, "m1", c.srv), newTestRaftEnd(t, "m2", c.cli)
			meet(srv, cli)
			err := cli.appendTo(srv)
			if c.getThrough != (err == nil) {
				t.Fatalf("AppendEntries: err=%v, want getting through=%v", err, c.getThrough)
			}
			if c.acceptWhy != "" {
				testutil.WaitFor(t, 5*time.Second, func() bool { return srv.ref.get("accept/"+c.acceptWhy) > 0 }, "acceptor counts refusal "+c.acceptWhy)
			}
			if c.dialWhy != "" && cli.ref.get("dial/"+c.dialWhy) == 0 {
				t.Errorf("dialer refusals %v, want dial/%s", cli.ref.n, c.dialWhy)
			}
			if c.getThrough && srv.ref.total()+cli.ref.total() != 0 {
				t.Errorf("refusals on a good connection: acceptor %v dialer %v", srv.ref.n, cli.ref.n)
			}
		})
	}
}

// TestRaftStreamSilentDialer: a dialer that connects and says nothing
// delays no other connection, and is cut off after the handshake timeout.
func TestRaftStreamSilentDialer(t *testing.T) {
	const timeout = time.Second
	srv := newTestRaftEnd(t, "m1", RaftAuth{Token: "t", HandshakeTimeout: timeout})
	cli := newTestRaftEnd(t, "m2", RaftAuth{Token: "t"})
	meet(srv, cli)
	silent, err := net.Dial("tcp", string(srv.trans.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()
	if err := cli.appendTo(srv); err != nil {
		t.Fatalf("a peer was refused while a silent dialer waited: %v", err)
	}
	if n := srv.ref.get("accept/" + refuseTimeout); n != 0 {
		t.Fatalf("the good peer got through only after the silent dialer timed out (%v)", time.Since(start))
	}
	_ = silent.SetReadDeadline(time.Now().Add(5 * timeout))
	_, err = io.ReadAll(silent) // the challenge, then EOF when the acceptor gives up
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the silent dialer was still connected after %v", time.Since(start))
	}
	testutil.WaitFor(t, time.Second, func() bool { return srv.ref.get("accept/"+refuseTimeout) == 1 }, "the timeout is counted")
}

// TestRaftStreamDialerChecksAcceptorProof: an acceptor that does not know
// the token (it answers the dialer's proof with a wrong one) is refused
// by the dialer before Raft sends it anything — an impostor could
// otherwise answer with a higher term and depose a leader.
func TestRaftStreamDialerChecksAcceptorProof(t *testing.T) {
	ln, got := testutil.AcceptOnce(t, func(c net.Conn) []byte {
		_, _ = c.Write(append([]byte(handshake.Magic), make([]byte, handshake.NonceLen)...))
		_, _ = io.ReadFull(c, make([]byte, len(handshake.Magic)+handshake.NonceLen+1+len("m1")+1+len("m2")+handshake.MACLen))
		_, _ = c.Write(make([]byte, handshake.MACLen)) // not the proof
		rest, _ := io.ReadAll(c)                       // whatever the dialer sends after
		return rest
	})
	ref := &refusals{}
	peers := NewRaftPeers("m1")
	s, err := newRaftStream(ports.Addr(t), RaftAuth{Token: "t", Refused: ref.note, Peers: peers}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	peers.Follow(staticConf(map[string]string{"m1": s.Addr().String(), "m2": ln.Addr().String()}))
	defer s.Close()
	if c, err := s.Dial(raft.ServerAddress(ln.Addr().String()), 2*time.Second); err == nil {
		c.Close()
		t.Fatal("the dialer accepted an acceptor with a wrong proof")
	}
	if rest := <-got; len(rest) != 0 {
		t.Errorf("the dialer sent %d bytes after the wrong proof", len(rest))
	}
	if ref.get("dial/"+refuseToken) != 1 {
		t.Errorf("refusals %v, want one dial/token", ref.n)
	}
}

// TestRaftStreamBoundsPendingHandshakes: past maxPendingRaftHandshakes
// silent dialers, a new connection is closed at once (counted busy)
// rather than holding one more goroutine.
func TestRaftStreamBoundsPendingHandshakes(t *testing.T) {
	srv := newTestRaftEnd(t, "m1", RaftAuth{Token: "t", HandshakeTimeout: 10 * time.Second})
	meet(srv)
	addr := string(srv.trans.LocalAddr())
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for i := 0; i < maxPendingRaftHandshakes; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
		// The challenge means its handshake has started.
		if _, err := io.ReadFull(c, make([]byte, len(handshake.Magic)+handshake.NonceLen)); err != nil {
			t.Fatalf("silent dialer %d: %v", i, err)
		}
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection %d past the bound was served (read %d bytes, %v)", maxPendingRaftHandshakes+1, n, err)
	}
	// The acceptor counts the refusal after closing the connection, so the
	// dialer's read can return first: wait for the count.
	deadline := time.Now().Add(5 * time.Second)
	for srv.ref.get("accept/"+refuseBusy) < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.ref.get("accept/" + refuseBusy); got != 1 {
		t.Errorf("busy refusals %d, want 1", got)
	}
}

// TestRaftStreamProofIsBoundToItsDirection: m1's proof for a connection
// m1→m2, relayed by whoever m1's configuration sends it to, is no proof
// of a connection m2→m1 (the ids swapped: the MAC covers them) nor of
// m1→m1 (the ids as sent: m1 is not the target named).
func TestRaftStreamProofIsBoundToItsDirection(t *testing.T) {
	for _, c := range []struct {
		name string
		swap bool
		why  string
	}{
		{"ids swapped", true, refuseToken},
		{"ids as sent", false, refuseIdentity},
	} {
		t.Run(c.name, func(t *testing.T) {
			m1 := newTestRaftEnd(t, "m1", RaftAuth{Token: "t"})
			m2 := newTestRaftEnd(t, "m2", RaftAuth{Token: "t"})
			ghost, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			relay := raftiotest.NewRelayLayer(t, ghost, c.swap)
			a1, a2 := string(m1.trans.LocalAddr()), string(m2.trans.LocalAddr())
			m1.peers.Follow(staticConf(map[string]string{"m1": a1, "m2": ghost.Addr().String()}))
			m2.peers.Follow(staticConf(map[string]string{"m1": a1, "m2": a2}))
			stop := make(chan struct{})
			defer close(stop)
			go func() { // m1 keeps dialing "m2" at the relay's address
				for {
					select {
					case <-stop:
						return
					default:
					}
					var resp raft.AppendEntriesResponse
					_ = m1.trans.AppendEntries("m2", raft.ServerAddress(ghost.Addr().String()), &raft.AppendEntriesRequest{Term: 7}, &resp)
					time.Sleep(20 * time.Millisecond)
				}
			}()
			if conn, err := relay.Dial(raft.ServerAddress(a1), 5*time.Second); err == nil {
				conn.Close()
				t.Fatal("m1 accepted its own proof for m1→m2, relayed back to it")
			} else {
				t.Logf("relay refused: %v", err)
			}
			testutil.WaitFor(t, 5*time.Second, func() bool { return m1.ref.get("accept/"+c.why) > 0 }, "m1 counts refusal "+c.why)
		})
	}
}

// TestRaftStreamRefusesOtherHandshakeVersion: a master speaking another
// version of the token handshake is refused as such on either side, not
// as a stranger or a token mismatch.
func TestRaftStreamRefusesOtherHandshakeVersion(t *testing.T) {
	old := handshake.Prefix + "\x01"
	// An old acceptor: the new dialer refuses its challenge.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(append([]byte(old), make([]byte, handshake.NonceLen)...))
		_, _ = io.ReadAll(c)
	}()
	ref := &refusals{}
	peers := NewRaftPeers("m1")
	s, err := newRaftStream(ports.Addr(t), RaftAuth{Token: "t", Refused: ref.note, Peers: peers}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	peers.Follow(staticConf(map[string]string{"m1": s.Addr().String(), "m2": ln.Addr().String()}))
	_, err = s.Dial(raft.ServerAddress(ln.Addr().String()), 2*time.Second)
	if err == nil || ref.get("dial/"+refuseVersion) != 1 || !strings.Contains(err.Error(), "handshake version 1") {
		t.Errorf("dial to an old acceptor: err=%v refusals %v, want one dial/version naming version 1", err, ref.n)
	}
	// An old dialer: the new acceptor refuses its hello.
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, len(handshake.Magic)+handshake.NonceLen)); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write(append([]byte(old), make([]byte, handshake.NonceLen+handshake.MACLen)...))
	testutil.WaitFor(t, 5*time.Second, func() bool { return ref.get("accept/"+refuseVersion) == 1 }, "the acceptor counts accept/version")
}
