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

// A peer is local when its address is a loopback one or the address it
// connected to; any other keeps the host's congestion control.
func TestLocalPeer(t *testing.T) {
	for _, c := range []struct {
		local, peer string
		want        bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.2", true},
		{"::1", "::1", true},
		{"10.1.2.3", "10.1.2.3", true},
		{"10.1.2.3", "10.1.2.4", false},
		{"::", "2001:db8::1", false},
	} {
		local := &net.TCPAddr{IP: net.ParseIP(c.local), Port: 7000}
		peer := &net.TCPAddr{IP: net.ParseIP(c.peer), Port: 40000}
		if got := LocalPeer(local, peer); got != c.want {
			t.Errorf("local %s, peer %s: local peer %v, want %v", c.local, c.peer, got, c.want)
		}
	}
}
