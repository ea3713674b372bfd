package master

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"sexton/internal/ctxsleep"

	"github.com/hashicorp/raft"

	"sexton/api"
	"sexton/fsm"
	"sexton/grant"
)

// watchLeadership starts the leader's duties when this node wins an
// election and stops them when it loses leadership. hashicorp/raft keeps
// only the newest notification, so a loss and a new win in quick
// succession can arrive as one "true": duties still running from an
// earlier term are then stopped and started afresh for the new one.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	ch := n.raft.LeaderCh()
	for {
		select {
		case <-n.stopped:
			return
		case isLeader := <-ch:
			term := n.raft.CurrentTerm()
			if isLeader && n.raft.State() == raft.Leader {
				n.startLeaderDuties(term)
			} else {
				n.stopLeaderDuties()
			}
		}
	}
}

// startLeaderDuties runs becomeLeader for term, unless it already runs for
// that term.
func (n *Node) startLeaderDuties(term uint64) {
	n.leaderMu.Lock()
	running := n.leaderCancel != nil
	same := n.leaderTerm == term
	n.leaderMu.Unlock()
	if running && same {
		return
	}
	if running {
		n.stopLeaderDuties()
	}
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	if n.leaderCancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.leaderCancel, n.leaderTerm = cancel, term
	n.leaderWG.Add(1)
	go func() {
		defer n.leaderWG.Done()
		n.becomeLeader(ctx, term)
	}()
}

func (n *Node) stopLeaderDuties() {
	n.leaderMu.Lock()
	cancel := n.leaderCancel
	n.leaderCancel, n.leaderTerm = nil, 0
	// Under leaderMu, so a becomeLeader finishing right now either set
	// readiness before this (and it is cleared here) or sees its context
	// cancelled and does not set it.
	n.readyTerm.Store(0)
	n.leaderMu.Unlock()
	if cancel != nil {
		cancel()
		n.leaderWG.Wait()
	}
	// Parked long polls answer NOT_LEADER now rather than at their
	// timeout or at the next entry that concerns their segment.
	n.wake.all()
}

// markReady records that this node finished the barrier and EpochBegin as
// leader of term, unless its duties for that term were stopped meanwhile.
func (n *Node) markReady(ctx context.Context, term uint64) bool {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	n.readyTerm.Store(term)
	return true
}

// isReady reports whether this node is the leader of the current term and
// finished that term's barrier and EpochBegin. A readiness recorded in an
// earlier term never counts: the node may have lost leadership and won it
// again since, without a barrier in the new term. The term is read on both
// sides of the state, so the Leader state seen belongs to that term (a
// node leads at most once per term).
func (n *Node) isReady() bool {
	ready := n.readyTerm.Load()
	if ready == 0 || n.raft.CurrentTerm() != ready {
		return false
	}
	if n.raft.State() != raft.Leader {
		return false
	}
	return n.raft.CurrentTerm() == ready
}

// becomeLeader runs while this node leads: barrier, EpochBegin, then the
// periodic duties. Reads and fetches are refused until ready is set, so a
// new leader never answers from state older than its own term.
func (n *Node) becomeLeader(ctx context.Context, term uint64) {
	start := time.Now()
	for ctx.Err() == nil {
		if err := n.barrier(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			n.log.Warn("leader barrier failed; retrying", "error", err)
			if !ctxsleep.Sleep(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		eb, err := n.epochBegin(term)
		if err != nil {
			n.log.Warn("EpochBegin failed; retrying", "error", err)
			if !ctxsleep.Sleep(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		if !n.bootstrapSettings(ctx) {
			return
		}
		// A failover must never shorten a reader's lease: treat every
		// object as leased for one lease period from now. The cluster's
		// first leader has no predecessor that could have granted one.
		floor := time.Now().Add(n.cfg.LeaseTTL)
		if eb.MasterEpoch == 1 {
			floor = time.Time{}
		}
		n.soft.BeginTerm(floor)
		// Liveness is soft state the old leader took with it. Assume every
		// mounted holder alive for one TTL rather than refusing every put
		// until the first heartbeats arrive; a dead one stops being placed
		// on when the TTL passes without a heartbeat.
		for _, seg := range n.fsm.Segments() {
			if seg.Mounted && !seg.Retired {
				n.soft.Heartbeat(seg.ID, 0, seg.Capacity, 0, time.Now())
			}
		}
		if n.cfg.hooks.beforeReady != nil {
			n.cfg.hooks.beforeReady(n)
		}
		if !n.markReady(ctx, term) {
			return
		}
		n.metrics.leaderChanges.Inc()
		n.log.Info("leader ready", "master_epoch", eb.MasterEpoch, "cluster_id", eb.ClusterID, "took", time.Since(start))
		break
	}
	// The DFS and job duties run beside the tick loop until ctx ends.
	var duties sync.WaitGroup
	defer duties.Wait()
	if n.dfs != nil {
		duties.Go(func() { n.dfsLeader(ctx) })
	}
	duties.Go(func() { n.jobsLeader(ctx) })
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n.discardAbandonedPuts()
			n.expireIncBlocks()
		}
	}
}

// epochBegin proposes the EpochBegin of a new master epoch in term. The
// first one of a cluster carries a random cluster id and grant key; later
// ones carry the state's own, and the fsm keeps the first it saw anyway.
func (n *Node) epochBegin(term uint64) (*fsm.EpochBeginResult, error) {
	cluster := n.fsm.Stats().ClusterID
	if cluster == 0 {
		cluster = randomClusterID()
	}
	var gk []byte
	if len(n.fsm.GrantKey()) == 0 {
		gk = grant.NewKey()
	}
	return proposeFor[fsm.EpochBeginResult](n, &fsm.EpochBegin{
		V: fsm.EpochBeginV2, Term: term, LeaderID: n.cfg.ID,
		LeaderAddr: n.advertisedRPC(), ClusterID: cluster, GrantKey: gk,
	})
}

// bootstrapSettings proposes this node's settings flags when the cluster
// has never applied a Settings entry (a new cluster, or one that ran before
// settings were replicated), before the leader serves anything, so no
// request is applied under settings that then change. The entry carries
// the legacy settings the state applied under so far: a flag not given
// keeps their value (an upgraded cluster keeps the old build's capacity),
// and a node that applied under other ones is told (raftFSM). It returns
// false when the duties were stopped meanwhile.
func (n *Node) bootstrapSettings(ctx context.Context) bool {
	for ctx.Err() == nil {
		if _, ok := n.fsm.Settings(); ok {
			return true
		}
		want := n.cfg.settingsFlags()
		r, err := proposeFor[fsm.SettingsResult](n, n.settingsCommand(want, api.Session{}))
		if r == nil && api.CodeOf(err) == api.CodeInvalidParams {
			n.log.Error("this node's settings flags cannot be proposed as the initial settings", "settings", want, "error", err)
			return true
		}
		if r == nil {
			n.log.Warn("proposing the initial settings failed; retrying", "error", err)
			if !ctxsleep.Sleep(ctx, 100*time.Millisecond) {
				return false
			}
			continue
		}
		if err != nil {
			// The state's settings stay as they are (the defaults); an
			// operator can set them with operator settings set.
			n.log.Error("the cluster refused this node's settings flags as its initial settings", "settings", want, "error", err)
		} else {
			n.log.Info("initial replicated settings set from this node's flags", "settings", r.Settings)
		}
		return true
	}
	return false
}

// settingsCommand is the Settings entry that makes change: while the
// state has no settings yet it carries the legacy settings the state
// applies under, which the change is merged into.
func (n *Node) settingsCommand(change api.Settings, sess api.Session) *fsm.Settings {
	c := &fsm.Settings{V: fsm.SettingsV2, Settings: change, Session: sess}
	if legacy, ok := n.fsm.LegacySettings(); ok {
		c.Legacy = &legacy
	}
	return c
}

// settingsFlagConflicts names every settings flag given to this node that
// disagrees with the replicated value; the replicated value is the one in
// force.
func settingsFlagConflicts(flags, replicated api.Settings) []string {
	var out []string
	for _, sp := range api.SettingsTable {
		if f, r := sp.Get(&flags), sp.Get(&replicated); f != 0 && f != r {
			out = append(out, fmt.Sprintf("%s: flag %s, replicated %s", sp.Flag, sp.Format(f), sp.Format(r)))
		}
	}
	return out
}

// warnSettingsFlags waits until this node has applied the cluster's
// settings, then logs every settings flag that disagrees with them, once.
// The flags lose: Apply uses the replicated settings only (invariant 12).
func (n *Node) warnSettingsFlags() {
	defer n.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if set, ok := n.fsm.Settings(); ok {
			for _, c := range settingsFlagConflicts(n.cfg.settingsFlags(), set) {
				n.log.Warn("settings flag disagrees with the replicated settings and is ignored; change it with operator settings set", "setting", c)
			}
			if n.cfg.LegacyRegistryCapacity != 0 {
				n.log.Info("--legacy-registry-capacity is no longer consulted: the cluster's settings are replicated; the flag can be dropped",
					"flag", n.cfg.LegacyRegistryCapacity, "replicated_registry_capacity", set.RegistryCapacity)
			}
			return
		}
		select {
		case <-n.stopped:
			return
		case <-tick.C:
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
	if !n.soft.RevokeOpen(st.PendingTasks, st.RegistryCapacity, now) {
		return
	}
	cutoff := now.Add(-n.cfg.DiscardTimeout).UnixNano()
	for _, p := range n.fsm.PendingPuts(cutoff) {
		r, err := proposeFor[fsm.PutEndResult](n, &fsm.PutRevoke{V: fsm.PutRevokeV1, Key: p.Key, Incarnation: p.Incarnation})
		if r == nil {
			return // not proposed, or its outcome is unknown
		}
		switch {
		case api.CodeOf(err) == api.CodeLocalDeleteRegistryFull:
			st := n.fsm.Stats()
			n.soft.RevokeFull(st.PendingTasks, st.RegistryCapacity, time.Now())
			n.log.Warn("discard of abandoned puts paused: the delete registry is full", "key", p.Key, "inc", p.Incarnation,
				"pending_tasks", st.PendingTasks, "capacity", st.RegistryCapacity)
			return
		case err != nil:
			n.log.Warn("discard of abandoned put refused", "key", p.Key, "inc", p.Incarnation, "error", err)
		default:
			n.soft.RevokeDone()
			n.log.Info("discarded abandoned put", "key", p.Key, "inc", p.Incarnation)
		}
	}
}

func (n *Node) advertisedRPC() string {
	if n.cfg.RPCAdvertise != "" {
		return n.cfg.RPCAdvertise
	}
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
