package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
)

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
