package master

import (
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"sexton/api"
)

// softState is what only the leader knows and a new leader rebuilds:
// which holders are alive (from heartbeats) and which objects are under a
// read lease. None of it is replicated; a failover resets it, and the new
// leader compensates by treating every object as leased for one period.
type softState struct {
	mu         sync.Mutex
	holders    map[api.SegmentID]holderLiveness
	leases     map[string]time.Time
	leaseFloor time.Time // every object is leased until this instant
	sweepAt    int       // sweep expired leases when the map reaches this size
}

// minLeaseSweep is the lease-map size below which expired leases are not
// swept at all.
const minLeaseSweep = 1 << 16

type holderLiveness struct {
	lastSeen  time.Time
	used      int64
	capacity  int64
	deadBytes int64
}

func newSoftState() *softState {
	return &softState{holders: map[api.SegmentID]holderLiveness{}, leases: map[string]time.Time{}, sweepAt: minLeaseSweep}
}

func (s *softState) beginTerm(leaseFloor time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holders = map[api.SegmentID]holderLiveness{}
	s.leases = map[string]time.Time{}
	s.sweepAt = minLeaseSweep
	s.leaseFloor = leaseFloor
}

func (s *softState) heartbeat(seg api.SegmentID, used, capacity, dead int64, now time.Time) {
	s.mu.Lock()
	s.holders[seg] = holderLiveness{lastSeen: now, used: used, capacity: capacity, deadBytes: dead}
	s.mu.Unlock()
}

func (s *softState) forget(seg api.SegmentID) {
	s.mu.Lock()
	delete(s.holders, seg)
	s.mu.Unlock()
}

func (s *softState) live(seg api.SegmentID, ttl time.Duration, now time.Time) (holderLiveness, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holders[seg]
	return h, ok && now.Sub(h.lastSeen) <= ttl
}

// grantLease protects key from eviction until now+ttl. It never protects
// from a user's Remove.
func (s *softState) grantLease(key string, until time.Time) {
	s.mu.Lock()
	if until.After(s.leases[key]) {
		s.leases[key] = until
	}
	// Sweep expired leases when the map has doubled since the last sweep,
	// so the cost is amortized over the Gets that grew it (a fixed
	// threshold would rescan the whole map on every Get once that many
	// leases are live at once).
	if len(s.leases) >= s.sweepAt {
		now := time.Now()
		for k, t := range s.leases {
			if t.Before(now) {
				delete(s.leases, k)
			}
		}
		s.sweepAt = max(2*len(s.leases), minLeaseSweep)
	}
	s.mu.Unlock()
}

// leased reports whether key is under a read lease at now.
func (s *softState) leased(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.leaseFloor) {
		return true
	}
	return now.Before(s.leases[key])
}

// candidate is a live, mounted, capable-or-not segment eligible for a put.
type candidate struct {
	seg  api.SegmentInfo
	free int64
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
		return nil, api.Errorf(api.CodeNoSpace, "no pool has %d live holders with %d free bytes", replicaNum, size)
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
