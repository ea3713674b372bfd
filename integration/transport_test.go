package integration

import (
	be "encoding/binary"
	"net"
	"testing"
	"time"

	"sexton/api"
	"sexton/transport"
)

// testToken is a cluster token of the strength the binary asks for.
const testToken = "test-cluster-token-0123456789abcdef"

// Against a real master with a cluster token: a wrong token, an oversized
// frame, garbage bytes and a client that connects and stalls are refused,
// and a well-behaved client is served throughout.
func TestBadClientsAreRefusedWithoutDisturbingOthers(t *testing.T) {
	c := startCluster(t, 1, "--cluster-token", testToken)
	addr := c.nodes[0].rpcAddr
	good := dialT(t, addr, testToken)
	ping := func(what string) {
		t.Helper()
		ctx, cancel := ctxT(5 * time.Second)
		defer cancel()
		var st api.StatusResponse
		if err := good.Call(ctx, api.MethodStatus, &api.Empty{}, &st); err != nil || st.NodeID != "m1" {
			t.Fatalf("after %s, the good client failed: %v %+v", what, err, st)
		}
	}
	ping("start")

	// A wrong token: a clear UNAUTHENTICATED, and no call served.
	ctx, cancel := ctxT(5 * time.Second)
	bad, err := transport.Dial(ctx, addr, transport.ClientConfig{Token: "wrong"})
	if err == nil {
		err = bad.Call(ctx, api.MethodStatus, &api.Empty{}, &api.StatusResponse{})
		bad.Close()
	}
	cancel()
	if api.CodeOf(err) != api.CodeUnauthenticated {
		t.Fatalf("wrong token: got %v, want UNAUTHENTICATED", err)
	}
	ctx, cancel = ctxT(5 * time.Second)
	none, err := transport.Dial(ctx, addr, transport.ClientConfig{})
	if err == nil {
		err = none.Call(ctx, api.MethodStatus, &api.Empty{}, &api.StatusResponse{})
		none.Close()
	}
	cancel()
	if err == nil {
		t.Fatalf("a client without the token was served")
	}
	ping("wrong token")

	// An oversized frame claim and garbage: the server hangs up.
	for name, payload := range map[string][]byte{
		"oversized frame": be.BigEndian.AppendUint32(nil, 1<<31),
		"garbage":         []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\x01\x02garbage"),
	} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write(payload)
		_ = nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 1<<16)
		for {
			if _, err := nc.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("%s: the server kept the connection open", name)
				}
				break
			}
		}
		nc.Close()
		ping(name)
	}

	// A client that connects and says nothing: others are served meanwhile.
	stall, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	for i := 0; i < 5; i++ {
		ping("a stalled connection")
	}
}
