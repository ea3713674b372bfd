package master

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/internal/secret"
	"sexton/internal/testutil"
	"sexton/internal/tlsconf"
	"sexton/raftio"
	"sexton/raftio/raftiotest"
)

// Cluster tokens of the strength secret.CheckToken asks for: two
// different ones, for a cluster and an odd master out.
const (
	testToken      = "test-cluster-token-0123456789abcdef"
	testOtherToken = "other-cluster-token-0123456789abcdef"
)

// A master refuses to start with a token too short to be a secret, and
// says how to make one; nothing is created in its data dir.
func TestWeakClusterTokenIsRefused(t *testing.T) {
	cfg := Config{ID: "m1", DataDir: t.TempDir(), RaftAddr: "127.0.0.1:0", RPCAddr: "127.0.0.1:0", ClusterToken: "s3cret", Bootstrap: true}
	_, err := New(cfg)
	if err == nil || !strings.Contains(err.Error(), "--cluster-token is 6 bytes") || !strings.Contains(err.Error(), secret.GenerateCommand) {
		t.Fatalf("a 6-byte token: %v", err)
	}
	if ents, _ := os.ReadDir(cfg.DataDir); len(ents) != 0 {
		t.Fatalf("data dir written by a refused start: %v", ents)
	}
}

// raftView is what an intruder on the Raft port could change: a node's
// term, the leader it follows, its log and applied index.
type raftView struct {
	term, lastIndex, lastTerm, applied uint64
	leader                             raft.ServerAddress
}

func viewOf(t *testing.T, n *Node) raftView {
	t.Helper()
	st := n.raft.Stats()
	u := func(k string) uint64 {
		v, err := strconv.ParseUint(st[k], 10, 64)
		if err != nil {
			t.Fatalf("raft stat %s=%q: %v", k, st[k], err)
		}
		return v
	}
	addr, _ := n.raft.LeaderWithID()
	return raftView{term: u("term"), lastIndex: u("last_log_index"), lastTerm: u("last_log_term"), applied: n.raft.AppliedIndex(), leader: addr}
}

// intruderTransport is hashicorp/raft's own plain TCP transport: no
// cluster token, no certificate.
func intruderTransport(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// injectHigherTerm sends a follower an AppendEntries and a RequestVote of
// a far higher term, as a stranger on the network could, and returns the
// two errors.
func injectHigherTerm(t *testing.T, tr *raft.NetworkTransport, target raft.ServerAddress, claimID string, v raftView) (aeErr, rvErr error) {
	t.Helper()
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(claimID), Addr: []byte(tr.LocalAddr())}
	bogus := v.term + 100
	ae := &raft.AppendEntriesRequest{
		RPCHeader:         hdr,
		Term:              bogus,
		PrevLogEntry:      v.lastIndex,
		PrevLogTerm:       v.lastTerm,
		Entries:           []*raft.Log{{Index: v.lastIndex + 1, Term: bogus, Type: raft.LogNoop}},
		LeaderCommitIndex: v.lastIndex + 1,
	}
	var aeResp raft.AppendEntriesResponse
	aeErr = tr.AppendEntries(raft.ServerID("victim"), target, ae, &aeResp)
	t.Logf("AppendEntries term %d: err=%v resp={term %d success %v last %d}", bogus, aeErr, aeResp.Term, aeResp.Success, aeResp.LastLog)
	rv := &raft.RequestVoteRequest{
		RPCHeader:          hdr,
		Term:               bogus + 1,
		LastLogIndex:       v.lastIndex + 1000,
		LastLogTerm:        bogus + 1,
		LeadershipTransfer: true, // a follower ignores votes while it knows a leader, unless this is set
	}
	var rvResp raft.RequestVoteResponse
	rvErr = tr.RequestVote(raft.ServerID("victim"), target, rv, &rvResp)
	t.Logf("RequestVote term %d: err=%v resp={term %d granted %v}", bogus+1, rvErr, rvResp.Term, rvResp.Granted)
	return aeErr, rvErr
}

// TestRaftPortRefusesStrangers: a stranger dialing a follower's Raft port
// with hashicorp/raft's own transport, without the cluster token, cannot
// move the cluster's term, leader or state with a higher-term
// AppendEntries or RequestVote.
func TestRaftPortRefusesStrangers(t *testing.T) {
	tc := startCluster(t, 3, slowElections, func(c *Config) { c.ClusterToken = testToken })
	tc.mountHolder(t, "seg-a", "")
	ps := tc.put(t, "k", 10, 1)
	li := tc.leaderIndex(t)
	fi := (li + 1) % 3
	leader, victim := tc.node(li), tc.node(fi)
	// Let the follower apply everything before looking.
	testutil.WaitFor(t, harnessTimeout, func() bool {
		return victim.raft.AppliedIndex() == leader.raft.AppliedIndex()
	}, "follower caught up")
	before, leaderBefore := viewOf(t, victim), viewOf(t, leader)
	t.Logf("before: follower %s %+v, leader %s %+v", victim.cfg.ID, before, leader.cfg.ID, leaderBefore)

	tr := intruderTransport(t)
	aeErr, rvErr := injectHigherTerm(t, tr, raft.ServerAddress(tc.cfgs[fi].RaftAddr), tc.cfgs[(li+2)%3].ID, before)
	time.Sleep(time.Second) // give any effect time to show
	leaderNow := tc.waitLeader(t)
	after, leaderAfter := viewOf(t, victim), viewOf(t, leaderNow)
	t.Logf("after: follower %s %+v, leader %s %+v", victim.cfg.ID, after, leaderNow.cfg.ID, leaderAfter)

	if aeErr == nil || rvErr == nil {
		t.Errorf("a stranger's RPCs were answered: AppendEntries err=%v, RequestVote err=%v", aeErr, rvErr)
	}
	waitRefused(t, victim, "accept", "protocol", 2)
	if after != before {
		t.Errorf("follower changed: before %+v after %+v", before, after)
	}
	if leaderNow != leader || leaderAfter.term != leaderBefore.term {
		t.Errorf("leadership changed: leader term %d → %d", leaderBefore.term, leaderAfter.term)
	}
	if got, err := tc.get("k"); err != nil || got.Incarnation != ps.Incarnation {
		t.Errorf("object k after the attack: %+v %v", got, err)
	}
}

// slowElections makes spurious elections on a loaded test machine
// unlikely, so "the term did not move" means the intruder was refused.
func slowElections(c *Config) {
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
}

// waitRefused waits until n counted at least want refusals of reason on
// side. The acceptor counts a refusal after it has sent its TLS alert or
// closed the connection, so the dialer can see its error first: the count
// is eventually right, not at the moment the dialer returns.
func waitRefused(t *testing.T, n *Node, side, reason string, want float64) {
	t.Helper()
	var got float64
	deadline := time.Now().Add(5 * time.Second)
	for got = refusedCount(t, n, side, reason); got < want && time.Now().Before(deadline); got = refusedCount(t, n, side, reason) {
		time.Sleep(10 * time.Millisecond)
	}
	if got < want {
		t.Errorf("sexton_raft_conn_refused_total{%s,%s} = %v on %s, want ≥ %v", side, reason, got, n.cfg.ID, want)
	}
}

// refusedCount reads sexton_raft_conn_refused_total{side, reason} of n.
func refusedCount(t *testing.T, n *Node, side, reason string) float64 {
	t.Helper()
	mfs, err := n.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sexton_raft_conn_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["side"] == side && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// noCertDialer dials TLS without a client certificate (and without
// checking the server's).
type noCertDialer struct{ net.Listener }

func (d noCertDialer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(a), &tls.Config{InsecureSkipVerify: true})
}

// noCertTLSTransport is hashicorp/raft's transport over noCertDialer.
func noCertTLSTransport(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(noCertDialer{ln}, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// commitOn commits a Settings entry on the leader (through propose, not
// the RPC listener) and waits until the nodes with index in on applied
// it; it returns the leader's applied index.
func (tc *testCluster) commitOn(t *testing.T, maxSessions int, on ...int) uint64 {
	t.Helper()
	tc.setSettings(t, api.Settings{MaxSessions: maxSessions})
	want := tc.waitLeader(t).raft.AppliedIndex()
	for _, i := range on {
		n := tc.node(i)
		testutil.WaitFor(t, harnessTimeout, func() bool { return n.raft.AppliedIndex() >= want }, n.cfg.ID+" applies the entry")
	}
	return want
}

// startTLSCluster starts three masters with certificates of ca, commits
// on all of them, and returns the cluster with its leader's index and a
// follower's.
func startTLSCluster(t *testing.T, ca *testutil.CA) (tc *testCluster, li, fi int) {
	t.Helper()
	tc = startCluster(t, 3, slowElections, func(c *Config) { c.TLS = ca.MasterSource(t, c.ID) })
	tc.commitOn(t, 1000, 0, 1, 2)
	li = tc.leaderIndex(t)
	return tc, li, (li + 1) % 3
}

// TestRaftTLSCluster: three masters with certificates of one CA elect a
// leader and replicate over mutual TLS; a dialer with a certificate of
// another CA, or with none, is refused and moves nothing.
func TestRaftTLSCluster(t *testing.T) {
	ca, other := testutil.NewCAs(t)
	tc, li, fi := startTLSCluster(t, ca)
	leader, victim := tc.node(li), tc.node(fi)
	before, leaderBefore := viewOf(t, victim), viewOf(t, leader)

	// hashicorp/raft's plain TCP transport, no certificate at all.
	aeErr, rvErr := injectHigherTerm(t, intruderTransport(t), raft.ServerAddress(tc.cfgs[fi].RaftAddr), tc.cfgs[(li+2)%3].ID, before)
	if aeErr == nil || rvErr == nil {
		t.Errorf("a dialer without a certificate was answered: %v, %v", aeErr, rvErr)
	}
	// TLS, but no client certificate.
	aeErr, rvErr = injectHigherTerm(t, noCertTLSTransport(t), raft.ServerAddress(tc.cfgs[fi].RaftAddr), tc.cfgs[(li+2)%3].ID, before)
	if aeErr == nil || rvErr == nil {
		t.Errorf("a TLS dialer without a client certificate was answered: %v, %v", aeErr, rvErr)
	}
	// A certificate of another CA, from a dialer that trusts the
	// cluster's CA (so only the follower's check can refuse it).
	foreign, err := other.Issue("intruder")
	if err != nil {
		t.Fatal(err)
	}
	aeErr, rvErr = injectHigherTerm(t, certTransport(t, foreign), raft.ServerAddress(tc.cfgs[fi].RaftAddr), tc.cfgs[(li+2)%3].ID, before)
	if aeErr == nil || rvErr == nil {
		t.Errorf("a dialer with another CA's certificate was answered: %v, %v", aeErr, rvErr)
	}
	waitRefused(t, victim, "accept", "tls", 6)
	wantNothingMoved(t, tc, victim, before, leader, leaderBefore)
	// Replication still works after the refusals.
	tc.commitOn(t, 1001, 0, 1, 2)
}

// TestRaftTokenMismatchBetweenMasters: a master configured with another
// cluster token cannot join: the two that agree elect a leader and commit
// without it, it never receives an entry, its vote requests are refused
// and the leadership does not move.
func TestRaftTokenMismatchBetweenMasters(t *testing.T) {
	tc := startCluster(t, 3, slowElections, func(c *Config) {
		c.ClusterToken = testToken
		if c.ID == "m3" {
			c.ClusterToken = testOtherToken
		}
	})
	leader := tc.waitLeader(t)
	if leader.cfg.ID == "m3" {
		t.Fatal("the master with the wrong token leads")
	}
	termBefore := viewOf(t, leader).term
	applied := tc.commitOn(t, 1000, 0, 1)
	odd := tc.node(2)
	// m3 hears no leader, so it campaigns; m1 and m2 refuse its
	// connections, and it refuses the leader's.
	testutil.WaitFor(t, harnessTimeout, func() bool {
		return refusedCount(t, odd, "dial", "token") > 0 &&
			refusedCount(t, tc.node(0), "accept", "token")+refusedCount(t, tc.node(1), "accept", "token") > 0
	}, "m3's vote requests are refused")
	if refusedCount(t, odd, "accept", "token") == 0 || refusedCount(t, leader, "dial", "token") == 0 {
		t.Errorf("the leader's connections to m3 were not refused on both sides")
	}
	if got := odd.raft.AppliedIndex(); got >= applied {
		t.Errorf("m3 applied index %d, the cluster's %d: it got entries despite the wrong token", got, applied)
	}
	if strings.Contains(tc.logs.String(), raftio.OpenRaftWarning) {
		t.Errorf("a node with a cluster token warned that its Raft port is open")
	}
	if now := tc.waitLeader(t); now != leader || viewOf(t, now).term != termBefore {
		t.Errorf("the leadership moved: %s term %d → %s term %d", leader.cfg.ID, termBefore, now.cfg.ID, viewOf(t, now).term)
	}
}

// TestOpenRaftPortIsWarnedAbout: a master with neither a token nor TLS
// says at start, at WARN, that its Raft port is open to anyone.
func TestOpenRaftPortIsWarnedAbout(t *testing.T) {
	tc := startCluster(t, 1)
	logs := tc.logs.String()
	i := strings.Index(logs, raftio.OpenRaftWarning)
	if i < 0 || !strings.Contains(logs[max(0, i-40):i], "[WARN]") {
		t.Fatalf("no WARN %q in the logs", raftio.OpenRaftWarning)
	}
}

// The development cluster (sexton dev) runs without token or TLS by
// design: it notes the open Raft port at Info, without the warning.
func TestDevMasterDoesNotWarnAboutOpenRaftPort(t *testing.T) {
	tc := startCluster(t, 1, func(c *Config) { c.Dev = true })
	logs := tc.logs.String()
	if strings.Contains(logs, raftio.OpenRaftWarning) || !strings.Contains(logs, "development cluster: the Raft port has neither cluster token nor TLS") {
		t.Fatalf("dev master's logs:\n%s", logs)
	}
}

// TestRaftHandshakeRelayIsRefused: an intruder at an address the leader's
// Raft configuration lists (a non-voter "ghost") receives the leader's
// own dials and relays the leader's token proof to a follower and back
// to the leader, then sends a higher-term AppendEntries and RequestVote:
// both masters refuse (the proof names the ghost as its target), and no
// term, leader or state moves.
func TestRaftHandshakeRelayIsRefused(t *testing.T) {
	tc := startCluster(t, 3, slowElections, func(c *Config) { c.ClusterToken = testToken })
	tc.commitOn(t, 1000, 0, 1, 2)
	li := tc.leaderIndex(t)
	fi := (li + 1) % 3
	leader, victim := tc.node(li), tc.node(fi)
	ghost, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relay := raftiotest.NewRelayLayer(t, ghost, false)
	if err := leader.raft.AddNonvoter("ghost", raft.ServerAddress(ghost.Addr().String()), 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	tc.commitOn(t, 1001, 0, 1, 2)
	before, leaderBefore := viewOf(t, victim), viewOf(t, leader)
	tr := raft.NewNetworkTransport(relay, 1, 5*time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })

	aeErr, rvErr := injectHigherTerm(t, tr, raft.ServerAddress(tc.cfgs[fi].RaftAddr), leader.cfg.ID, before)
	if aeErr == nil || rvErr == nil {
		t.Errorf("the follower answered RPCs over a relayed handshake: AppendEntries err=%v, RequestVote err=%v", aeErr, rvErr)
	}
	aeErr, rvErr = injectHigherTerm(t, tr, raft.ServerAddress(tc.cfgs[li].RaftAddr), victim.cfg.ID, leaderBefore)
	if aeErr == nil || rvErr == nil {
		t.Errorf("the leader answered RPCs over its own relayed handshake: AppendEntries err=%v, RequestVote err=%v", aeErr, rvErr)
	}
	waitRefused(t, victim, "accept", "identity", 2)
	waitRefused(t, leader, "accept", "identity", 2)
	wantNothingMoved(t, tc, victim, before, leader, leaderBefore)
}

// wantNothingMoved gives an intruder's RPCs a second to show any effect,
// then fails unless victim's view is still before and leader still leads
// in its term.
func wantNothingMoved(t *testing.T, tc *testCluster, victim *Node, before raftView, leader *Node, leaderBefore raftView) {
	t.Helper()
	time.Sleep(time.Second)
	leaderNow := tc.waitLeader(t)
	// The follower may still apply entries its log already held (it
	// learns their commit from the next heartbeat); an intruder's entry
	// would show as a new last index, term or leader instead.
	after := viewOf(t, victim)
	caughtUp := after
	if after.applied >= before.applied && after.applied <= before.lastIndex {
		caughtUp.applied = before.applied
	}
	if caughtUp != before {
		t.Errorf("follower changed: before %+v after %+v", before, after)
	}
	if leaderNow != leader || viewOf(t, leaderNow).term != leaderBefore.term {
		t.Errorf("leadership changed: %s term %d → %s term %d", leader.cfg.ID, leaderBefore.term, leaderNow.cfg.ID, viewOf(t, leaderNow).term)
	}
}

// certDialer dials TLS with a client certificate (and without checking
// the server's).
type certDialer struct {
	net.Listener
	cert tls.Certificate
}

func (d certDialer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(a), &tls.Config{Certificates: []tls.Certificate{d.cert}, InsecureSkipVerify: true})
}

// certTransport is an intruder's Raft transport that dials with the
// certificate of f and trusts any server.
func certTransport(t *testing.T, f tlsconf.Files) *raft.NetworkTransport {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(certDialer{ln, cert}, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// TestRaftTLSRefusesNonMasterCertificates: with TLS, a certificate of the
// cluster's own CA that does not name a master of the configuration — a
// client-only one, a holder's — cannot send a follower a TimeoutNow or a
// higher-term RequestVote: refused before a Raft byte is read, and the
// leader, the term and the state stay.
func TestRaftTLSRefusesNonMasterCertificates(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster")
	tc, li, fi := startTLSCluster(t, ca)
	leader, victim := tc.node(li), tc.node(fi)
	before, leaderBefore := viewOf(t, victim), viewOf(t, leader)
	target := raft.ServerAddress(tc.cfgs[fi].RaftAddr)

	clientOnly, err := ca.IssueClient("client")
	if err != nil {
		t.Fatal(err)
	}
	holder, err := ca.Issue("h1")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []tlsconf.Files{clientOnly, holder} {
		tr := certTransport(t, f)
		hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(leader.cfg.ID), Addr: []byte(tc.cfgs[li].RaftAddr)}
		var tnResp raft.TimeoutNowResponse
		tnErr := tr.TimeoutNow(raft.ServerID(victim.cfg.ID), target, &raft.TimeoutNowRequest{RPCHeader: hdr}, &tnResp)
		t.Logf("TimeoutNow with %s: err=%v resp=%+v", f.Cert, tnErr, tnResp)
		_, rvErr := injectHigherTerm(t, tr, target, leader.cfg.ID, before)
		if tnErr == nil || rvErr == nil {
			t.Errorf("certificate %s without a master id was answered: TimeoutNow err=%v, RequestVote err=%v", f.Cert, tnErr, rvErr)
		}
	}
	waitRefused(t, victim, "accept", "identity", 6)
	wantNothingMoved(t, tc, victim, before, leader, leaderBefore)
	tc.commitOn(t, 1001, 0, 1, 2)
}

// TestRaftJoinWithTokenAndTLS: a master started without a configuration
// (waiting to be added) accepts the leader's dials although the leader is
// in no configuration it has, and once added it replicates: the handshake
// checks the ids of the configuration the leader holds, the added
// server's included.
func TestRaftJoinWithTokenAndTLS(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster")
	tc := startCluster(t, 3, func(c *Config) {
		c.ClusterToken = testToken
		c.TLS = ca.MasterSource(t, c.ID)
	})
	cfg := tc.cfgs[0]
	cfg.ID, cfg.DataDir, cfg.RaftAddr, cfg.RPCAddr = "m4", filepath.Join(t.TempDir(), "m4"), freeAddr(t), freeAddr(t)
	cfg.Peers, cfg.Bootstrap = nil, false
	cfg.TLS = ca.MasterSource(t, "m4")
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "master-m4", Level: hclog.Info, Output: tc.logs})
	m4, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m4.Shutdown)
	leader := tc.waitLeader(t)
	if err := leader.raft.AddVoter("m4", raft.ServerAddress(cfg.RaftAddr), 0, harnessTimeout).Error(); err != nil {
		t.Fatalf("add m4: %v", err)
	}
	want := tc.commitOn(t, 1000, 0, 1, 2)
	testutil.WaitFor(t, harnessTimeout, func() bool { return m4.raft.AppliedIndex() >= want }, "m4 applies the cluster's entries")
	for _, n := range append([]*Node{m4}, tc.nodes...) {
		if got := refusedCount(t, n, "accept", "identity") + refusedCount(t, n, "dial", "identity"); got != 0 {
			t.Errorf("%s refused %v connections for their ids", n.cfg.ID, got)
		}
	}
}

// TestMasterRefusesToStartWithoutAMasterCertificate: a master whose TLS
// certificate does not name its id (a holder's, another master's) does
// not start, and says which name the certificate needs.
func TestMasterRefusesToStartWithoutAMasterCertificate(t *testing.T) {
	ca := testutil.NewTestCA(t, "cluster")
	for name, src := range map[string]*tlsconf.Source{"holder": ca.Source(t, "", "h1"), "other master": ca.MasterSource(t, "m2")} {
		cfg := Config{ID: "m1", DataDir: t.TempDir(), RaftAddr: freeAddr(t), RPCAddr: freeAddr(t), Bootstrap: true, TLS: src, Logger: hclog.NewNullLogger()}
		n, err := New(cfg)
		if err == nil {
			n.Shutdown()
			t.Errorf("%s certificate: the master started", name)
			continue
		}
		if !strings.Contains(err.Error(), "sexton://master/m1") {
			t.Errorf("%s certificate: %v, want it to name sexton://master/m1", name, err)
		}
	}
}
