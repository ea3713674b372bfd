package fsm

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

func BenchmarkZZPauseDetail(b *testing.B) {
	bf := largeState(b)
	type rec struct {
		d    time.Duration
		j    int
		gc   uint32
		kind string
	}
	var recs []rec
	next := largeObjects + largeTasks
	var ms runtime.MemStats
	for i := 0; i < 30; i++ {
		start := time.Now()
		v := bf.f.Snapshot()
		runtime.ReadMemStats(&ms)
		recs = append(recs, rec{time.Since(start), -1, ms.NumGC, "snap"})
		for j := 0; j < 1000; j++ {
			k := benchKey(next)
			next++
			start = time.Now()
			r := bf.apply(b, &PutStart{Key: k, Size: 1, Replicas: benchReplicas}).(*PutStartResult)
			d := time.Since(start)
			if d > time.Millisecond {
				runtime.ReadMemStats(&ms)
				recs = append(recs, rec{d, j, ms.NumGC, "start"})
			}
			start = time.Now()
			bf.apply(b, &PutEnd{Key: k, Incarnation: r.Incarnation})
			if d := time.Since(start); d > time.Millisecond {
				runtime.ReadMemStats(&ms)
				recs = append(recs, rec{d, j, ms.NumGC, "end"})
			}
		}
		v.Release()
	}
	slices.SortFunc(recs, func(a, b rec) int { return int(b.d - a.d) })
	for _, r := range recs[:min(15, len(recs))] {
		b.Logf("%v j=%d gc=%d %s", r.d, r.j, r.gc, r.kind)
	}
}
