package transport

import (
	"context"
	"net"
	"sync"
	"testing"

	"sexton/api"
)

// The pool shares one connection per address and redials after the server
// restarts on the same address.
func TestPoolReconnectsAfterServerRestart(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	addr := ts.addr
	p := NewPool(ClientConfig{})
	defer p.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var resp echoResp
			if err := p.Call(context.Background(), addr, "Echo", &echoReq{N: i}, &resp); err != nil || resp.N != i {
				t.Errorf("call %d: %v %d", i, err, resp.N)
			}
		})
	}
	wg.Wait()
	if n := ts.Stats().Connections; n != 1 {
		t.Fatalf("%d connections for one address, want 1", n)
	}
	ts.stop()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot rebind %s: %v", addr, err)
	}
	ts2 := startServerOn(t, l, ServerConfig{}, nil)
	// The first call may race the old connection's go-away and fail
	// UNAVAILABLE (it may have been sent, so the pool does not repeat it);
	// the one after must be served on a new connection.
	var resp echoResp
	if err := p.Call(context.Background(), addr, "Echo", &echoReq{N: 5}, &resp); err != nil {
		requireCode(t, err, api.CodeUnavailable)
		if err := p.Call(context.Background(), addr, "Echo", &echoReq{N: 5}, &resp); err != nil {
			t.Fatalf("after restart: %v", err)
		}
	}
	if resp.N != 5 {
		t.Fatalf("after restart answered %d", resp.N)
	}
	if ts2.Stats().Connections != 1 {
		t.Fatal("pool did not reconnect to the new server")
	}
	p.Close()
	requireCode(t, p.Call(context.Background(), addr, "Echo", &echoReq{}, nil), api.CodeUnavailable)
}
