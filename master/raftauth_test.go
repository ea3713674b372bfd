package master

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

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
	tc := startCluster(t, 3, slowElections, func(c *Config) { c.ClusterToken = "s3cret" })
	tc.mountHolder(t, "seg-a", "")
	ps := tc.put(t, "k", 10, 1)
	li := tc.leaderIndex(t)
	fi := (li + 1) % 3
	leader, victim := tc.node(li), tc.node(fi)
	// Let the follower apply everything before looking.
	eventually(t, harnessTimeout, "follower caught up", func() bool {
		return victim.raft.AppliedIndex() == leader.raft.AppliedIndex()
	})
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
	if got := refusedCount(t, victim, "accept", refuseProtocol); got < 2 {
		t.Errorf("sexton_raft_conn_refused_total{accept,protocol} = %v on the follower, want ≥ 2", got)
	}
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
