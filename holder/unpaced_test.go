package holder

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// congestionControl is the TCP congestion control of nc's socket.
func congestionControl(t *testing.T, nc net.Conn) string {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	var optErr error
	if err := rc.Control(func(fd uintptr) {
		cc, optErr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		t.Fatal(err)
	}
	if optErr != nil {
		t.Fatal(optErr)
	}
	return cc
}

// acceptOne dials ln from loopback and returns the connection ln accepted.
func acceptOne(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	got := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		got <- nc
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nc := <-got
	if nc == nil {
		t.FailNow()
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// A data connection from this host is not paced: it runs Reno whatever
// the host's default congestion control is.
func TestDataListenerLocalClientsRunReno(t *testing.T) {
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if def := congestionControl(t, acceptOne(t, plain)); def == localCongestionControl {
		t.Skipf("the host's default congestion control is already %s: nothing tells the two apart", def)
	}
	ln, err := listenData("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if cc := congestionControl(t, acceptOne(t, ln)); cc != localCongestionControl {
		t.Fatalf("a loopback client's data connection runs %s, want %s", cc, localCongestionControl)
	}

	// The holder's own data listener is that one.
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	svc, err := StartService(s, ServiceConfig{Masters: []string{"127.0.0.1:1"}, ListenAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, ok := svc.ln.(localUnpaced); !ok {
		t.Fatalf("the data listener is a %T, not listenData's", svc.ln)
	}
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
		if got := localPeer(local, peer); got != c.want {
			t.Errorf("local %s, peer %s: local peer %v, want %v", c.local, c.peer, got, c.want)
		}
	}
}
