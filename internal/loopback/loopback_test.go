package loopback

import (
	"net"
	"testing"
)

// TestFreeCanBeBound: the address is on the loopback, has a port, and can
// be listened on right away.
func TestFreeCanBeBound(t *testing.T) {
	addr, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Free() = %q (%v), want 127.0.0.1 with a port", addr, err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	l.Close()
}
