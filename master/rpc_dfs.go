package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// dfsPublished is what this master tells clients.
func (n *Node) dfsPublished() api.DFSConfigResponse {
	s, ok := n.fsm.DFSSettings()
	if !ok || n.dfs == nil {
		return api.DFSConfigResponse{Enabled: false, Root: n.cfg.DFS.Root, Adapter: n.cfg.DFS.Adapter}
	}
	return n.cfg.DFS.Published(s.Config())
}

func (n *Node) handleDFSConfig(_ context.Context, _ *api.Empty) (*api.DFSConfigResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	p := n.dfsPublished()
	return &p, nil
}

func (n *Node) handleDFSStatus(_ context.Context, _ *api.Empty) (*api.DFSStatusResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	out := &api.DFSStatusResponse{DFSConfigResponse: n.dfsPublished()}
	st, ok := n.fsm.DFSStats()
	if !ok {
		return out, nil
	}
	out.Allocator, out.Capacity, out.Used, out.LiveBytes, out.DeadBytes = st.Allocator, st.Capacity, st.Used, st.LiveBytes, st.DeadBytes
	out.Entries, out.MaxBuckets, out.ChargedBuckets, out.PendingDeletions = st.LiveEntries, st.MaxBuckets, st.ChargedBuckets, st.PendingDeletions
	out.NextBucketID, out.Evicted, out.Aborted, out.Lost = st.NextBucketID, st.Evicted, st.Aborted, st.Lost
	for _, u := range st.Units {
		out.Units = append(out.Units, api.DFSUnitStatus{Unit: u.Unit, Path: u.Path, State: u.State.String(), File: u.File.String(),
			Capacity: u.Capacity, Used: u.Used, LiveBytes: u.LiveBytes, DeadBytes: u.DeadBytes, Entries: u.LiveEntries,
			PendingEntries: u.PendingEntries, DeleteFailures: u.DeleteFailures})
	}
	if n.dfs != nil {
		for _, st := range n.dfs.Strays() {
			out.StrayFiles = append(out.StrayFiles, st.Path+" (seen "+st.FirstSeen.UTC().Format(time.RFC3339)+")")
		}
	}
	return out, nil
}

func (n *Node) handleDFSSetMaxBuckets(_ context.Context, req *api.DFSSetMaxBucketsRequest) (*api.Empty, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if _, err := proposeFor[fsm.DFSResult](n, &fsm.DFSSetMaxBuckets{V: fsm.DFSSetMaxBucketsV1, Max: req.Max}); err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}
