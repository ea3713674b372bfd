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

// verbs is placement's language: one handler per verb, on a fresh state
// and the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
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

// TestPlacement runs placement over segments as the fsm lists them and
// heartbeats as holders send them, on a fake clock from testdata/*.txt.
func TestPlacement(t *testing.T) { policytest.Run(t, verbs) }

func TestPlacementPrefersTheNamedSegment(t *testing.T) {
	now := time.Unix(1000, 0)
	s := liveness.New()
	all := []api.SegmentInfo{
		{ID: "a1", Pool: "A", Mounted: true, Capacity: 1000, Endpoint: "10.0.0.1:7201"},
		{ID: "a2", Pool: "A", Mounted: true, Capacity: 1000, Endpoint: "10.0.0.2:7201"},
		{ID: "a3", Pool: "A", Mounted: true, Capacity: 1000, Endpoint: "10.0.0.3:7201"},
		{ID: "b1", Pool: "B", Mounted: true, Capacity: 1000, Endpoint: "10.0.0.4:7201"},
	}
	for _, seg := range all {
		s.Heartbeat(seg.ID, 0, 1000, 0, now)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	// By host, by endpoint and by segment id: the first replica is always
	// there, the others distinct and in its pool.
	// Mooncake's "host:port" names the host (its port is not the holder's).
	for _, prefer := range [][]string{{"10.0.0.2"}, {"10.0.0.2:7201"}, {"a2"}, {"nowhere", "a2"}, {"10.0.0.2:12345"}} {
		for i := 0; i < 100; i++ {
			got, ok := PlacePreferred(all, prefer, s, 10*time.Second, now, 10, 2, "", rng)
			if !ok || len(got) != 2 || got[0].ID != "a2" || got[1].ID == "a2" || got[1].Pool != "A" {
				t.Fatalf("prefer %v: placed %v (ok %v), want a2 first and another holder of pool A", prefer, got, ok)
			}
		}
	}
	// An exact name wins over a host match: on one machine with two
	// holders, the endpoint picks one of them.
	same := append(all[:len(all):len(all)], api.SegmentInfo{ID: "a4", Pool: "A", Mounted: true, Capacity: 1000, Endpoint: "10.0.0.2:7202"})
	s.Heartbeat("a4", 0, 1000, 0, now)
	seen := map[api.SegmentID]int{}
	for i := 0; i < 100; i++ {
		got, _ := PlacePreferred(same, []string{"10.0.0.2:7202"}, s, 10*time.Second, now, 10, 1, "", rng)
		seen[got[0].ID]++
		got, _ = PlacePreferred(same, []string{"10.0.0.2"}, s, 10*time.Second, now, 10, 1, "", rng)
		seen[got[0].ID+"-host"]++
	}
	if seen["a4"] != 100 || seen["a2-host"] == 0 || seen["a4-host"] == 0 {
		t.Fatalf("exact endpoint then host: %v, want a4 always by endpoint, both a2 and a4 by host", seen)
	}
	// Not placeable there: nothing named, a dead or full segment, a pool
	// too small for the other replicas. The caller then places as usual.
	s.Heartbeat("a3", 0, 1000, 0, now.Add(-time.Minute))
	s.Heartbeat("a1", 995, 1000, 0, now) // 5 bytes free
	for _, c := range []struct {
		prefer []string
		n      int
	}{{nil, 1}, {[]string{"10.0.0.9"}, 1}, {[]string{"a3"}, 1}, {[]string{"a1"}, 1}, {[]string{"b1"}, 2}} {
		if got, ok := PlacePreferred(all, c.prefer, s, 10*time.Second, now, 10, c.n, "", rng); ok {
			t.Fatalf("prefer %v, %d replicas: placed %v, want no preferred placement", c.prefer, c.n, got)
		}
	}
	if err := CheckPrefer(make([]string, maxPrefer+1)); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("too many preferred segments: %v", err)
	}
	if err := CheckPrefer([]string{""}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("an empty preferred segment: %v", err)
	}
	if err := CheckPrefer([]string{strings.Repeat("x", maxPreferLen+1)}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("a preferred segment too long: %v", err)
	}
}
