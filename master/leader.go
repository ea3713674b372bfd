package master

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
)

// watchLeadership starts the leader's duties when this node wins an
// election and stops them when it loses leadership.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	ch := n.raft.LeaderCh()
	for {
		select {
		case <-n.stopped:
			return
		case isLeader := <-ch:
			if isLeader && n.raft.State() == raft.Leader {
				n.startLeaderDuties()
			} else {
				n.stopLeaderDuties()
			}
		}
	}
}

func (n *Node) startLeaderDuties() {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	if n.leaderCancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.leaderCancel = cancel
	n.leaderWG.Add(1)
	go func() {
		defer n.leaderWG.Done()
		n.becomeLeader(ctx)
	}()
}

func (n *Node) stopLeaderDuties() {
	n.leaderMu.Lock()
	cancel := n.leaderCancel
	n.leaderCancel = nil
	n.leaderMu.Unlock()
	n.ready.Store(false)
	if cancel != nil {
		cancel()
		n.leaderWG.Wait()
	}
}

// becomeLeader runs while this node leads: barrier, EpochBegin, then the
// periodic duties. Reads and fetches are refused until ready is set, so a
// new leader never answers from state older than its own term.
func (n *Node) becomeLeader(ctx context.Context) {
	start := time.Now()
	for ctx.Err() == nil {
		if err := n.raft.Barrier(n.cfg.ApplyTimeout).Error(); err != nil {
			n.log.Warn("leader barrier failed; retrying", "error", err)
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		cluster := n.fsm.Stats().ClusterID
		if cluster == 0 {
			cluster = randomClusterID()
		}
		res, err := n.propose(&fsm.EpochBegin{
			V: fsm.EpochBeginV1, Term: n.raft.CurrentTerm(), LeaderID: n.cfg.ID,
			LeaderAddr: n.advertisedRPC(), ClusterID: cluster, Now: time.Now().UnixNano(),
		})
		if err != nil {
			n.log.Warn("EpochBegin failed; retrying", "error", err)
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		eb := res.(*fsm.EpochBeginResult)
		// A failover must never shorten a reader's lease: treat every
		// object as leased for one lease period from now.
		n.soft.beginTerm(time.Now().Add(n.cfg.LeaseTTL))
		// Liveness is soft state the old leader took with it. Assume every
		// mounted holder alive for one TTL rather than refusing every put
		// until the first heartbeats arrive; a dead one stops being placed
		// on when the TTL passes without a heartbeat.
		for _, seg := range n.fsm.Segments() {
			if seg.Mounted && !seg.Retired {
				n.soft.heartbeat(seg.ID, 0, seg.Capacity, 0, time.Now())
			}
		}
		n.ready.Store(true)
		n.metrics.leaderChanges.Inc()
		n.log.Info("leader ready", "master_epoch", eb.MasterEpoch, "cluster_id", eb.ClusterID, "took", time.Since(start))
		break
	}
	if n.dfs != nil {
		var dfsWG sync.WaitGroup
		dfsWG.Add(1)
		go func() {
			defer dfsWG.Done()
			n.dfsLeader(ctx)
		}()
		defer dfsWG.Wait()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n.discardAbandonedPuts()
		}
	}
}

// discardAbandonedPuts revokes PutStarts that never ended. A revoke needs
// registry slots for the tasks of the replicas the client may have
// written; while the registry is full it is refused, and proposing it
// again every tick for every abandoned put would only fill the log. So
// the first refusal for a full registry ends the tick and closes the
// gate until the registry has room again (fewer tasks, more capacity) or
// a backoff passes.
func (n *Node) discardAbandonedPuts() {
	now := time.Now()
	st := n.fsm.Stats()
	if !n.soft.revokeOpen(st.PendingTasks, st.RegistryCapacity, now) {
		return
	}
	cutoff := now.Add(-n.cfg.DiscardTimeout).UnixNano()
	for _, p := range n.fsm.PendingPuts(cutoff) {
		res, err := n.propose(&fsm.PutRevoke{V: fsm.PutRevokeV1, Key: p.Key, Incarnation: p.Incarnation, Now: time.Now().UnixNano()})
		if err != nil {
			return
		}
		r, _ := res.(*fsm.PutEndResult)
		switch {
		case r != nil && r.Err != nil && r.Err.Code == api.CodeLocalDeleteRegistryFull:
			st := n.fsm.Stats()
			n.soft.revokeFull(st.PendingTasks, st.RegistryCapacity, time.Now())
			n.log.Warn("discard of abandoned puts paused: the delete registry is full", "key", p.Key, "inc", p.Incarnation,
				"pending_tasks", st.PendingTasks, "capacity", st.RegistryCapacity)
			return
		case r != nil && r.Err != nil:
			n.log.Warn("discard of abandoned put refused", "key", p.Key, "inc", p.Incarnation, "error", r.Err)
		default:
			n.soft.revokeDone()
			n.log.Info("discarded abandoned put", "key", p.Key, "inc", p.Incarnation)
		}
	}
}

func (n *Node) advertisedRPC() string {
	if n.rpcLn != nil {
		return n.rpcLn.Addr().String()
	}
	return n.cfg.RPCAddr
}

func randomClusterID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic("crypto/rand: " + err.Error())
		}
		if v := binary.BigEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
