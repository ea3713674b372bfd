package master

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"sexton/api"
	"sexton/fsm"
	"sexton/master/policy/placement"
)

// Placement: which segments take a put's replicas. The policy is
// placement.Place and placement.PlacePreferred, functions of the segment
// list, what heartbeats said, the time and a random source; this file
// feeds them the leader's state.

// placementRand is the leader's placement randomness for puts started at now.
func placementRand(now time.Time) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(now.UnixNano()), 0x5e))
}

// segmentCache is the leader's copy of the fsm's segment list for
// placement, kept while fsm.SegmentsVersion says it is current: building
// it copies every segment (with 1,000 holders, 10 % of the leader's CPU
// at 100 puts/s; docs/SCALING.md, "The fsm's memory and CPU"), and segments change only on a mount,
// an unmount, a retirement or a rebuild. Its entries' PendingTasks may be
// stale; placement does not read them.
type segmentCache struct {
	mu      sync.Mutex
	version fsm.SegmentsVersion
	segs    []api.SegmentInfo // shared with callers: read only
}

// placementSegments returns the segment list for placement, read only.
// The version is read before the list, so the list kept is at least as
// new as the version it is kept under, never staler.
func (n *Node) placementSegments() []api.SegmentInfo {
	v := n.fsm.SegmentsVersion()
	c := &n.segCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.segs == nil || c.version != v {
		c.segs, c.version = n.fsm.Segments(), v
	}
	return c.segs
}

// placeReplicas chooses a checked put's replicas: LOCAL_DISK segments by
// placement (never one the request excludes), DFS replicas left for the
// state to allocate.
func (n *Node) placeReplicas(req *api.PutStartRequest, now time.Time, rng *rand.Rand) ([]api.ReplicaDescriptor, error) {
	var reps []api.ReplicaDescriptor
	if req.ReplicaNum > 0 {
		candidates := n.placementSegments()
		if len(req.Exclude) > 0 {
			candidates = slices.DeleteFunc(slices.Clone(candidates), func(s api.SegmentInfo) bool { return slices.Contains(req.Exclude, s.ID) })
		}
		segs, ok := placement.PlacePreferred(candidates, req.Prefer, n.soft.Holders, n.cfg.HolderTTL, now, req.Size, req.ReplicaNum, req.Pool, rng)
		var err error
		if !ok {
			segs, err = placement.Place(candidates, n.soft.Holders, n.cfg.HolderTTL, now, req.Size, req.ReplicaNum, req.Pool, rng)
		}
		if err != nil {
			return nil, err
		}
		for _, s := range segs {
			reps = append(reps, api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: s.ID, Pool: s.Pool})
		}
	}
	for i := 0; i < req.DFSReplicaNum; i++ {
		reps = append(reps, api.ReplicaDescriptor{Kind: api.ReplicaDFS}) // the state allocates it
	}
	return reps, nil
}
