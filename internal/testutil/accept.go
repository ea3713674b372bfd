package testutil

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// AcceptOnce listens on a loopback port and serves its first connection
// with serve, on its own goroutine; the channel receives what serve
// answers (the zero T when the accept fails). The connection is closed
// after serve, the listener when the test ends.
func AcceptOnce[T any](t testing.TB, serve func(net.Conn) T) (net.Listener, <-chan T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan T, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			var zero T
			got <- zero
			return
		}
		defer c.Close()
		got <- serve(c)
	}()
	return ln, got
}

// Accepted dials ln from loopback and returns the connection ln accepted.
// Both ends are closed when the test ends.
func Accepted(t testing.TB, ln net.Listener) net.Conn {
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

// CongestionControl is the TCP congestion control of nc's socket.
func CongestionControl(t testing.TB, nc net.Conn) string {
	t.Helper()
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		t.Fatalf("a %T is no TCP connection", nc)
	}
	rc, err := tc.SyscallConn()
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

// SkipIfUnpacedByDefault skips a test that tells a paced connection from
// an unpaced one when the host's default congestion control is already
// want: nothing would tell the two apart.
func SkipIfUnpacedByDefault(t testing.TB, want string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if CongestionControl(t, Accepted(t, ln)) == want {
		t.Skipf("the host's default congestion control is already %s: nothing tells the two apart", want)
	}
}
