package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// handleListReplicas pages through the COMPLETE incarnations the table
// places on the holder's segment, for its ghost check: after a snapshot
// restore the table can list copies the holder tombstoned since (removes
// after the file's index rolled back), and only the holder knows. No
// barrier: a page a little behind the log costs nothing, because every
// drop is checked again, incarnation and all, when its entry applies, and
// a restore is applied on the leader before the EpochBegin that starts the
// holders' check.
func (n *Node) handleListReplicas(_ context.Context, req *api.ListReplicasRequest) (*api.ListReplicasResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if req.After != "" {
		if err := api.ValidKey(req.After); err != nil {
			return nil, err
		}
	}
	refs, next, more, err := n.fsm.ReplicasOn(req.Segment, req.MountEpoch, req.After, req.Limit)
	if err != nil {
		return nil, err
	}
	return &api.ListReplicasResponse{Refs: refs, Next: next, More: more}, nil
}

// handleDropTombstoned drops the holder's replicas it reports tombstoned
// (by record or by its key's tombstone floor), through the log, each only
// while its key's COMPLETE incarnation is still the one reported: a put
// that replaced it meanwhile is never touched. An object whose every
// replica is dropped this way leaves the table, which is what the removes
// a restore rolled back had decided.
func (n *Node) handleDropTombstoned(_ context.Context, req *api.DropTombstonedRequest) (*api.DropTombstonedResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if err := checkRefs(req.Refs); err != nil {
		return nil, err
	}
	if len(req.Refs) == 0 {
		return &api.DropTombstonedResponse{Dropped: []api.ObjectRef{}}, nil
	}
	r, err := proposeFor[fsm.DropTombstonedResult](n, &fsm.DropTombstoned{V: fsm.DropTombstonedV1, Segment: req.Segment, Epoch: req.MountEpoch, Refs: req.Refs})
	if err != nil {
		return nil, err
	}
	if len(r.Dropped) > 0 {
		n.log.Warn("dropped replicas their holder holds tombstoned (the table listed copies removed after a restored snapshot's index)",
			"segment", req.Segment, "reported", len(req.Refs), "dropped", len(r.Dropped), "objects_gone", r.Objects)
	}
	return &api.DropTombstonedResponse{Dropped: r.Dropped, Objects: r.Objects}, nil
}

// handleEvict drops a holder's replicas of live objects so it may free
// their bytes. Objects under a read lease are left out here (leases are
// leader soft state); the fsm leaves out what is not the segment's current
// copy and newest copies whose older copies still await deletion.
func (n *Node) handleEvict(_ context.Context, req *api.EvictRequest) (*api.EvictResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if err := checkRefs(req.Refs); err != nil {
		return nil, err
	}
	// Hold reads back from the lease check until the drop is applied: a
	// Get in between would answer a replica this entry then drops.
	n.soft.DropMu.Lock()
	defer n.soft.DropMu.Unlock()
	now := time.Now()
	refs := make([]api.ObjectRef, 0, len(req.Refs))
	for _, r := range req.Refs {
		if !n.soft.Leased(r, now) {
			refs = append(refs, r)
		}
	}
	if n.cfg.hooks.afterEvictCheck != nil {
		n.cfg.hooks.afterEvictCheck()
	}
	if len(refs) == 0 {
		return &api.EvictResponse{Evicted: []api.ObjectRef{}}, nil
	}
	r, err := proposeFor[fsm.DropResult](n, &fsm.DropReplicas{V: fsm.DropReplicasV1, Segment: req.Segment, Epoch: req.MountEpoch, Refs: refs, Now: now.UnixNano()})
	if err != nil {
		return nil, err
	}
	n.log.Info("evicted replicas for a holder", "segment", req.Segment, "asked", len(req.Refs), "dropped", len(r.Dropped))
	return &api.EvictResponse{Evicted: r.Dropped}, nil
}
