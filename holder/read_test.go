package holder

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/transport"
)

// readServer serves HolderRead of s on loopback and returns its address.
func readServer(t testing.TB, s *Store) string {
	t.Helper()
	svc := &Service{store: s}
	srv := transport.NewServer(transport.ServerConfig{MaxFrame: svc.dataMaxFrame()})
	transport.Register(srv, api.MethodHolderRead, svc.handleRead)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// dialRead is a connection to a readServer.
func dialRead(t testing.TB, addr string) *transport.Conn {
	t.Helper()
	conn, err := transport.Dial(context.Background(), addr, transport.ClientConfig{MaxFrame: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func readCall(conn *transport.Conn, key string, inc api.ObjectIncarnation) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp api.HolderReadResponse
	err := conn.Call(ctx, api.MethodHolderRead, &api.HolderReadRequest{Key: key, Incarnation: inc}, &resp)
	return resp.Value, err
}

// A HolderRead answer carries the value byte for byte at every size (its
// bytes go out from the slice the store read them into), an absent record
// is OBJECT_NOT_FOUND, and a record whose bytes fail their CRC is CORRUPT
// with no value, however the answer is encoded.
func TestDataReadAnswer(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, StoreOptions{})
	// Several values of each pooled size class, each with its own bytes.
	sizes := []int{0, 1, 1000, 64 << 10, 60 << 10, 300 << 10, 400 << 10, 1<<20 + 3, 1 << 20, 1<<20 - 5, 1<<20 + 9}
	for i, n := range sizes {
		mustPut(t, s, fmt.Sprintf("k%d", i), incN(uint64(i+1)), valueOf(fmt.Sprintf("v%d", i), n))
	}
	mustPut(t, s, "bad", incN(100), valueOf("bad", 100<<10))
	if err := s.CompactJournals(); err != nil {
		t.Fatal(err)
	}
	loc := s.idx.live[objectKey{"bad", incN(100)}]
	s.Close()
	bp := filepath.Join(dir, bucketName(loc.bucket))
	data, err := os.ReadFile(bp)
	if err != nil {
		t.Fatal(err)
	}
	data[loc.offset+int64(loc.size)/2] ^= 0xff
	if err := os.WriteFile(bp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	addr := readServer(t, s)
	conn := dialRead(t, addr)
	for i, n := range sizes {
		got, err := readCall(conn, fmt.Sprintf("k%d", i), incN(uint64(i+1)))
		if err != nil || !bytes.Equal(got, valueOf(fmt.Sprintf("v%d", i), n)) {
			t.Fatalf("read of %d bytes: %d bytes back, %v", n, len(got), err)
		}
	}
	// Read buffers are pooled: many reads at once on several connections
	// each get their own value back, never one a buffer held for another.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		c := dialRead(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 10; r++ {
				for i, n := range sizes {
					got, err := readCall(c, fmt.Sprintf("k%d", i), incN(uint64(i+1)))
					if err != nil || !bytes.Equal(got, valueOf(fmt.Sprintf("v%d", i), n)) {
						errs <- fmt.Errorf("concurrent read of %d bytes: %d bytes back (equal: %v), %v", n, len(got), bytes.Equal(got, valueOf(fmt.Sprintf("v%d", i), n)), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, err := readCall(conn, "absent", incN(7)); api.CodeOf(err) != api.CodeObjectNotFound || got != nil {
		t.Fatalf("absent record: %d bytes, %v; want OBJECT_NOT_FOUND", len(got), err)
	}
	got, err := readCall(conn, "bad", incN(100))
	if api.CodeOf(err) != api.CodeCorrupt || got != nil {
		t.Fatalf("corrupt record: %d bytes, %v; want CORRUPT and no value", len(got), err)
	}
}

// BenchmarkDataRead1MiB measures HolderRead of a 1 MiB value over a local
// TCP connection: the store's read and CRC check, the answer's encoding
// and the client's receive.
func BenchmarkDataRead1MiB(b *testing.B) {
	s := openT(b, b.TempDir(), StoreOptions{})
	defer s.Close()
	value := valueOf("v", 1<<20)
	mustPut(b, s, "k", incN(1), value)
	conn := dialRead(b, readServer(b, s))
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, err := readCall(conn, "k", incN(1)); err != nil || len(got) != len(value) {
			b.Fatalf("read: %d bytes, %v", len(got), err)
		}
	}
}
