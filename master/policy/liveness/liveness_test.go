package liveness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/master/policy/policytest"
)

// verbs is the liveness table's language: one handler per verb, on a
// fresh state and the file's clock.
func verbs(clock *policytest.Clock) policytest.Verbs {
	s := New()
	return policytest.Verbs{
		"heartbeat": func(a *policytest.Args) string {
			s.Heartbeat(api.SegmentID(a.Need("seg")), a.Int("used", 0), a.Int("cap", 0), a.Int("dead", 0), clock.At(a, "at"))
			return "ok"
		},
		"forget": func(a *policytest.Args) string {
			s.Forget(api.SegmentID(a.Need("seg")))
			return "ok"
		},
		"reset": func(*policytest.Args) string {
			s.Reset()
			return "ok"
		},
		"live": func(a *policytest.Args) string {
			ages := s.HeartbeatAges(clock.Now)
			var out []string
			for _, seg := range slices.Sorted(maps.Keys(ages)) {
				r, live := s.LiveReport(seg, a.Dur("ttl", 10*time.Second), clock.Now)
				out = append(out, fmt.Sprintf("%s: age=%s live=%v used=%d cap=%d dead=%d", seg, ages[seg], live, r.Used, r.Capacity, r.DeadBytes))
			}
			if len(out) == 0 {
				return "no holders"
			}
			return strings.Join(out, "\n")
		},
	}
}

// TestLiveness runs heartbeats and the liveness TTL on a fake clock from
// testdata/*.txt.
func TestLiveness(t *testing.T) { policytest.Run(t, verbs) }
