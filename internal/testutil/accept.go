package testutil

import (
	"net"
	"testing"
)

// AcceptOnce listens on a loopback port and serves its first connection
// with serve, on its own goroutine; the channel receives what serve
// answers (nil when the accept fails). The connection is closed after
// serve, the listener when the test ends.
func AcceptOnce(t testing.TB, serve func(net.Conn) []byte) (net.Listener, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		got <- serve(c)
	}()
	return ln, got
}
