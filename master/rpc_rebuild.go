package master

import (
	"context"
	"fmt"

	"sexton/api"
	"sexton/fsm"
)

// handleRebuildBegin proposes RebuildBegin: the fresh cluster starts
// rebuilding the lost cluster (raising its incarnation base) or, with
// Finish, takes over its id. The fsm decides
// whether the state is fresh enough; the answer is the state after it.
func (n *Node) handleRebuildBegin(_ context.Context, req *api.RebuildBeginRequest) (*api.RebuildBeginResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if len(req.Segments) > fsm.MaxRebuildSegments {
		return nil, api.Errorf(api.CodeInvalidParams, "rebuild begin: %d segments exceed %d", len(req.Segments), fsm.MaxRebuildSegments)
	}
	r, err := proposeFor[fsm.RebuildBeginResult](n, &fsm.RebuildBegin{
		V: fsm.RebuildBeginV1, ClusterID: req.ClusterID, IncFloor: req.IncFloor, Segments: req.Segments, Finish: req.Finish,
	})
	if err != nil {
		return nil, err
	}
	n.log.Warn("rebuild: begin", "rebuilding", fmt.Sprintf("%016x", req.ClusterID), "cluster", fmt.Sprintf("%016x", r.ClusterID),
		"inc_base", r.IncBase, "repeat", r.Repeat, "segments_added", r.SegmentsAdded, "finished", r.Finished)
	return &api.RebuildBeginResponse{ClusterID: r.ClusterID, IncBase: r.IncBase, Repeat: r.Repeat, SegmentsAdded: r.SegmentsAdded, Finished: r.Finished}, nil
}

// handleRebuildAdopt proposes one bounded RebuildAdopt entry and answers
// per item. Adoption is idempotent, so the CLI simply resends a batch
// whose answer it did not get.
func (n *Node) handleRebuildAdopt(_ context.Context, req *api.RebuildAdoptRequest) (*api.RebuildAdoptResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if k := len(req.Objects) + len(req.Deletes); k > fsm.MaxRebuildItems {
		return nil, api.Errorf(api.CodeInvalidParams, "rebuild adopt: %d items exceed %d", k, fsm.MaxRebuildItems)
	}
	r, err := proposeFor[fsm.RebuildAdoptResult](n, &fsm.RebuildAdopt{
		V: fsm.RebuildAdoptV1, ClusterID: req.ClusterID, Objects: req.Objects, Deletes: req.Deletes,
	})
	if err != nil {
		return nil, err
	}
	conv := func(rs []fsm.RebuildItemResult) []api.RebuildItemResult {
		out := make([]api.RebuildItemResult, len(rs))
		for i, x := range rs {
			out[i] = api.RebuildItemResult{Outcome: x.Outcome.String(), Tasks: x.Tasks, Err: x.Err}
		}
		return out
	}
	return &api.RebuildAdoptResponse{Objects: conv(r.Objects), Deletes: conv(r.Deletes)}, nil
}
