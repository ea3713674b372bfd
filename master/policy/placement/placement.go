package placement

import (
	"math/rand/v2"
	"sort"
	"time"

	"sexton/api"
	"sexton/master/policy/liveness"
)

// candidate is a live, mounted, capable-or-not segment eligible for a put.
type candidate struct {
	seg  api.SegmentInfo
	free int64
}

// NoPlacement is Place's one error. It depends on the request alone, so a
// repeated sessioned PutStart whose first attempt could not be placed is
// answered with the same error whatever placement says this time.
func NoPlacement(replicaNum int, size int64) *api.Error {
	return api.Errorf(api.CodeNoSpace, "no pool has %d live holders with %d free bytes", replicaNum, size)
}

// Place picks replicaNum distinct live segments of one pool. The pool is
// drawn with probability proportional to its free capacity among pools
// that have enough live segments; within it, segments are drawn weighted by
// free capacity without replacement.
func Place(segs []api.SegmentInfo, holders *liveness.Holders, ttl time.Duration, now time.Time, size int64, replicaNum int, onlyPool string, rng *rand.Rand) ([]api.SegmentInfo, error) {
	pools := map[string][]candidate{}
	for _, seg := range segs {
		if !seg.Mounted || seg.Retired || (onlyPool != "" && seg.Pool != onlyPool) {
			continue
		}
		h, ok := holders.LiveReport(seg.ID, ttl, now)
		if !ok {
			continue
		}
		capacity := seg.Capacity
		if h.Capacity > 0 {
			capacity = h.Capacity
		}
		free := capacity - h.Used
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
		return nil, NoPlacement(replicaNum, size)
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
