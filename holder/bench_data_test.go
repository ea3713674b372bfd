package holder

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/holderwire"
	"sexton/transport"
)

// BenchmarkDataWrite16MiB measures a 16 MiB put through the data RPC
// (HolderWrite over a local TCP connection: the client's framing, the
// holder's frame read and decode, the grant check, Store.Put), next to
// the disk's sequential write rate measured in the same iteration.
func BenchmarkDataWrite16MiB(b *testing.B) { benchDataWrite(b, 16<<20) }

// BenchmarkDataWrite4KiB is the same for a small value, where the RPC's
// fixed costs (framing, the handler's dispatch, the committer's fdatasync)
// dominate.
func BenchmarkDataWrite4KiB(b *testing.B) { benchDataWrite(b, 4<<10) }

func benchDataWrite(b *testing.B, size int) {
	dir := b.TempDir()
	s := openT(b, dir, StoreOptions{})
	defer s.Close()
	key := grant.NewKey()
	svc := &Service{store: s, grantKey: key}
	srv := transport.NewServer(transport.ServerConfig{MaxFrame: svc.dataMaxFrame()})
	srv.Handle(api.MethodHolderWrite, svc.serveWrite)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	conn, err := transport.Dial(context.Background(), ln.Addr().String(), transport.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	value := valueOf("v", size)
	raw := newRawWriter(b, dir)
	b.SetBytes(int64(size))
	var put, seq time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k, inc := fmt.Sprintf("data-%d", i), incN(uint64(i+1))
		g := grant.Sign(key, api.WriteGrant{Segment: s.SegmentID(), Key: k, Incarnation: inc, Expires: time.Now().Add(time.Minute).UnixNano(), Size: int64(len(value))})
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := conn.Call(ctx, api.MethodHolderWrite, holderwire.Body{Req: &api.HolderWriteRequest{Key: k, Tenant: "t", Incarnation: inc, Value: value, Grant: &g}}, &api.Empty{})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		put += time.Since(start)
		b.StopTimer()
		seq += raw.write(value)
		b.StartTimer()
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * float64(size) / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(put), "put-MB/s")
	b.ReportMetric(mbps(seq), "seqwrite-MB/s")
	b.ReportMetric(float64(seq)/float64(put), "put/seqwrite")
}
