package master

import (
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// Placement: which segments take a put's replicas. place is the policy, a
// function of the segment list, what heartbeats said, the time and a
// random source, tested without a cluster (policy_test.go,
// testdata/policy/placement*.txt); the rest feeds it the leader's state.

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
		segs, ok := placePreferred(candidates, req.Prefer, n.soft, n.cfg.HolderTTL, now, req.Size, req.ReplicaNum, req.Pool, rng)
		var err error
		if !ok {
			segs, err = place(candidates, n.soft, n.cfg.HolderTTL, now, req.Size, req.ReplicaNum, req.Pool, rng)
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

// candidate is a live, mounted, capable-or-not segment eligible for a put.
type candidate struct {
	seg  api.SegmentInfo
	free int64
}

// noPlacement is place's one error. It depends on the request alone, so a
// repeated sessioned PutStart whose first attempt could not be placed is
// answered with the same error whatever placement says this time.
func noPlacement(replicaNum int, size int64) *api.Error {
	return api.Errorf(api.CodeNoSpace, "no pool has %d live holders with %d free bytes", replicaNum, size)
}

// place picks replicaNum distinct live segments of one pool. The pool is
// drawn with probability proportional to its free capacity among pools
// that have enough live segments; within it, segments are drawn weighted by
// free capacity without replacement.
func place(segs []api.SegmentInfo, s *softState, ttl time.Duration, now time.Time, size int64, replicaNum int, onlyPool string, rng *rand.Rand) ([]api.SegmentInfo, error) {
	pools := map[string][]candidate{}
	for _, seg := range segs {
		if !seg.Mounted || seg.Retired || (onlyPool != "" && seg.Pool != onlyPool) {
			continue
		}
		h, ok := s.live(seg.ID, ttl, now)
		if !ok {
			continue
		}
		capacity := seg.Capacity
		if h.capacity > 0 {
			capacity = h.capacity
		}
		free := capacity - h.used
		if capacity > 0 && free < size {
			continue
		}
		if capacity <= 0 {
			free = 1 // unknown capacity: still placeable, lowest weight
		}
		pools[seg.Pool] = append(pools[seg.Pool], candidate{seg: seg, free: free})
	}
	names := make([]string, 0, len(pools))
	var total float64
	for name, cs := range pools {
		if len(cs) < replicaNum {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, noPlacement(replicaNum, size)
	}
	sort.Strings(names)
	weights := make([]float64, len(names))
	for i, name := range names {
		for _, c := range pools[name] {
			weights[i] += float64(c.free)
		}
		total += weights[i]
	}
	pick := names[drawWeighted(weights, total, rng)]
	cs := append([]candidate(nil), pools[pick]...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].seg.ID < cs[j].seg.ID })
	out := make([]api.SegmentInfo, 0, replicaNum)
	for len(out) < replicaNum {
		w := make([]float64, len(cs))
		var t float64
		for i, c := range cs {
			w[i] = float64(c.free)
			t += w[i]
		}
		i := drawWeighted(w, t, rng)
		out = append(out, cs[i].seg)
		cs = append(cs[:i], cs[i+1:]...)
	}
	return out, nil
}

func drawWeighted(w []float64, total float64, rng *rand.Rand) int {
	if total <= 0 {
		return rng.IntN(len(w))
	}
	x := rng.Float64() * total
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}
