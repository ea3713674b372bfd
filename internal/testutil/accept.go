package testutil

import (
	"net"
	"testing"
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
