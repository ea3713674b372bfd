package transport

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkRoundTrip measures small-body calls on loopback through one
// connection, with 1 and 16 concurrent callers. ns/op is per call across
// all callers, so calls/s = 1e9 / ns/op.
//
//	go test -run '^$' -bench RoundTrip -benchmem ./transport
func BenchmarkRoundTrip(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			ts := startServer(b, ServerConfig{}, nil)
			c := dial(b, ts.addr, ClientConfig{})
			mustEcho(b, c, 0)
			var next atomic.Int64
			var failed atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := echoReq{N: 1, Pad: "sixteen byte pad"}
					var resp echoResp
					for next.Add(1) <= int64(b.N) {
						if err := c.Call(context.Background(), "Echo", &req, &resp); err != nil {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if failed.Load() != 0 {
				b.Fatalf("%d calls failed", failed.Load())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
