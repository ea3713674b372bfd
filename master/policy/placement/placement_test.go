package placement

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/master/policy/liveness"
	"sexton/master/policy/policytest"
)

// TestPlacement runs placement over segments as the fsm lists them and
// heartbeats as holders send them, on a fake clock from testdata/*.txt.
func TestPlacement(t *testing.T) {
	policytest.Run(t, func(clock *policytest.Clock) policytest.Verbs {
		holders := liveness.New()
		var segs []api.SegmentInfo
		return policytest.Verbs{
			"segment": func(a *policytest.Args) string {
				segs = append(segs, api.SegmentInfo{
					ID: api.SegmentID(a.Need("id")), Pool: a.Str("pool", ""), Capacity: a.Int("cap", 0),
					Mounted: !a.Has("unmounted"), Retired: a.Has("retired"),
				})
				return "ok"
			},
			"heartbeat": func(a *policytest.Args) string {
				holders.Heartbeat(api.SegmentID(a.Need("seg")), a.Int("used", 0), a.Int("cap", 0), 0, clock.At(a, "at"))
				return "ok"
			},
			"place": func(a *policytest.Args) string {
				rng := rand.New(rand.NewPCG(uint64(a.Int("seed", 1)), 0))
				ttl := a.Dur("ttl", 10*time.Second)
				size, replicas, pool := a.Int("size", 1), int(a.Int("replicas", 1)), a.Str("pool", "")
				n := a.Int("draws", 0)
				if n <= 0 {
					return placed(Place(segs, holders, ttl, clock.Now, size, replicas, pool, rng))
				}
				// Many draws: how often each choice came up.
				counts := map[string]int{}
				for range n {
					counts[placed(Place(segs, holders, ttl, clock.Now, size, replicas, pool, rng))]++
				}
				var out []string
				for _, k := range slices.Sorted(maps.Keys(counts)) {
					out = append(out, fmt.Sprintf("%s: %d", k, counts[k]))
				}
				return strings.Join(out, "\n")
			},
		}
	})
}

// placed renders Place's answer: the segments chosen, or the error code.
func placed(got []api.SegmentInfo, err error) string {
	if err != nil {
		return "err=" + string(api.CodeOf(err))
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, string(s.ID)+"@"+s.Pool)
	}
	return strings.Join(ids, " ")
}
