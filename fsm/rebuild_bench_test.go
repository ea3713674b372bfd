package fsm

import (
	"fmt"
	"testing"

	"sexton/api"
)

// BenchmarkApplyRebuildAdopt is the cost per adopted object of a
// 1024-object RebuildAdopt entry (decode and apply), two replicas each.
func BenchmarkApplyRebuildAdopt(b *testing.B) {
	h := newHarness(b, DefaultRegistryCapacity)
	h.epoch(5)
	segs := []RebuildSegment{{Segment: "s1", Pool: "p", Capabilities: tombstoneCaps}, {Segment: "s2", Pool: "p", Capabilities: tombstoneCaps}}
	h.apply(&RebuildBegin{ClusterID: 7, IncFloor: 1 << 40, Segments: segs, Now: h.now})
	const per = 1024
	entries := make([][]byte, 0, 64)
	for e := range 64 {
		c := &RebuildAdopt{ClusterID: 7, Now: 1}
		for i := range per {
			c.Objects = append(c.Objects, RebuildObject{Key: fmt.Sprintf("bench/%09d", e*per+i), Tenant: "default", Size: 4096,
				Incarnation: api.ObjectIncarnation{High: 7, Low: uint64(1000 + e*per + i)}, Replicas: localReplicas("s1", "s2")})
		}
		data, err := Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, data)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.index++
		if _, err := h.f.Apply(h.index, h.term, entries[i%len(entries)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/object")
}
