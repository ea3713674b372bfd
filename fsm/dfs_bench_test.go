package fsm

import (
	"fmt"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

// BenchmarkApplyDFSPutCycle is the FSM side of one DFS put: decode and
// apply PutStart (allocation), PutEnd (commit) and Remove (free), per
// allocator. The cluster's cost is in `sexton bench dfs`.
func BenchmarkApplyDFSPutCycle(b *testing.B) {
	for _, kind := range []string{dfsalloc.KindShard, dfsalloc.KindBucket} {
		b.Run(kind, func(b *testing.B) {
			h := newHarness(b, 1000)
			h.epoch(7)
			s := SettingsOf(dfsalloc.DefaultConfig())
			s.Allocator, s.DeferredFreeSeconds, s.MaxBucketCount = kind, 0, 1<<20
			h.apply(&DFSConfigure{Settings: s, Now: h.now})
			keys := make([]string, 4096)
			for i := range keys {
				keys[i] = fmt.Sprintf("bench/%06d", i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[i%len(keys)]
				r := h.apply(&PutStart{PutStartItem: PutStartItem{Key: k, Size: 16 << 10, Replicas: []api.ReplicaDescriptor{{Kind: api.ReplicaDFS}}}, Now: h.now}).(*PutStartResult)
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				h.apply(&PutEnd{Key: k, Incarnation: r.Incarnation, Now: h.now})
				h.apply(&Remove{Keys: []string{k}, Now: h.now})
			}
		})
	}
}
