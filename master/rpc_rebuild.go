package master

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

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

// maxRefusedMounts bounds the leader's memory of refused mounts; past it
// the oldest attempt is forgotten (the holder's next attempt records it
// again).
const maxRefusedMounts = 1024

// refusedMountTTL forgets a refused holder that stopped trying (a refused
// holder asks again at least every 10 s).
const refusedMountTTL = 10 * time.Minute

// refusedMounts is leader soft state: the holders whose mounts the fsm
// refused with SEGMENT_NEEDS_ADOPTION, so `sexton status` and `operator
// segments` can name the late holders waiting for a decision.
type refusedMounts struct {
	mu sync.Mutex
	m  map[api.SegmentID]api.RefusedMount
}

func (r *refusedMounts) note(req *api.MountLocalDiskRequest, reason string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[api.SegmentID]api.RefusedMount{}
	}
	prev := r.m[req.Segment]
	if _, ok := r.m[req.Segment]; !ok && len(r.m) >= maxRefusedMounts {
		var oldest api.SegmentID
		for id, x := range r.m {
			if oldest == "" || x.LastAttempt < r.m[oldest].LastAttempt {
				oldest = id
			}
		}
		delete(r.m, oldest)
	}
	var marker *uint64
	if req.MarkerCluster != nil {
		m := *req.MarkerCluster
		marker = &m
	}
	r.m[req.Segment] = api.RefusedMount{Segment: req.Segment, Endpoint: req.Endpoint, Pool: req.Pool, ClientID: req.ClientID,
		MarkerCluster: marker, Reason: reason, LastAttempt: now.UnixNano(), Attempts: prev.Attempts + 1}
}

func (r *refusedMounts) forget(seg api.SegmentID) {
	r.mu.Lock()
	delete(r.m, seg)
	r.mu.Unlock()
}

// list returns the refused mounts still being attempted, by segment id.
func (r *refusedMounts) list(now time.Time) []api.RefusedMount {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []api.RefusedMount
	for id, x := range r.m {
		if now.Sub(time.Unix(0, x.LastAttempt)) > refusedMountTTL {
			delete(r.m, id)
			continue
		}
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b api.RefusedMount) int { return cmp.Compare(a.Segment, b.Segment) })
	return out
}

// refusedIfLeader is the refused mounts when this node leads (only the
// leader sees mounts), nil otherwise.
func (n *Node) refusedIfLeader() []api.RefusedMount {
	if !n.isReady() {
		return nil
	}
	return n.refused.list(time.Now())
}

// rebuildStatus is the rebuild part of status; nil for a cluster that was
// never rebuilt.
func (n *Node) rebuildStatus() *api.RebuildStatus {
	r := n.fsm.Rebuild()
	if r.Cluster == 0 {
		return nil
	}
	return &api.RebuildStatus{Cluster: r.Cluster, Finished: r.Finished, Closed: r.Closed, RemovedKeys: r.Removed, Overflowed: r.Overflowed, IncBase: r.IncBase}
}

// segmentSetCache keeps the ids of the cluster's non-retired segments and
// their digest for the SegmentsVersion they were computed at, so a
// heartbeat costs a comparison, not a walk of every segment.
type segmentSetCache struct {
	mu      sync.Mutex
	version fsm.SegmentsVersion
	valid   bool
	ids     []api.SegmentID
	digest  uint64
}

func (n *Node) segmentSet() ([]api.SegmentID, uint64) {
	c := &n.segSet
	v := n.fsm.SegmentsVersion()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.version != v {
		ids := []api.SegmentID{}
		for _, s := range n.fsm.Segments() {
			if !s.Retired {
				ids = append(ids, s.ID)
			}
		}
		slices.Sort(ids)
		c.ids, c.digest, c.version, c.valid = ids, api.SegmentSetDigest(ids), v, true
	}
	return c.ids, c.digest
}

// handleRebuildClose proposes RebuildClose: the adoption window of the
// finished rebuild ends.
func (n *Node) handleRebuildClose(_ context.Context, req *api.RebuildCloseRequest) (*api.RebuildCloseResponse, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	r, err := proposeFor[fsm.RebuildCloseResult](n, &fsm.RebuildClose{V: fsm.RebuildCloseV1, ClusterID: req.ClusterID})
	if err != nil {
		return nil, err
	}
	n.log.Warn("rebuild: adoption window closed", "rebuilt", fmt.Sprintf("%016x", req.ClusterID), "already", r.Already)
	return &api.RebuildCloseResponse{Already: r.Already}, nil
}
