package integration

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// The fault proxy's three states, against an echo server: pass forwards,
// drop resets open connections and refuses new ones, stall holds bytes
// and forwards none, and passing again closes what was stalled and
// forwards on new connections.
func TestFaultProxyStates(t *testing.T) {
	ln, err := net.Listen("tcp", freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	p := startFaultProxy(t, "echo", ln.Addr().String())

	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// echo says whether a line comes back within d.
	echo := func(c net.Conn, d time.Duration) bool {
		c.SetDeadline(time.Now().Add(d))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return false
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		return err == nil && line == "ping\n"
	}

	open := dial()
	if !echo(open, 2*time.Second) {
		t.Fatal("pass: no echo")
	}
	p.set(linkDrop)
	// An idle open connection is closed at once: the reader sees the
	// end, not a timeout.
	open.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("drop: an idle open connection was not closed (%v)", err)
	}
	if echo(dial(), time.Second) {
		t.Fatal("drop: a new connection forwards")
	}
	p.set(linkPass)
	stalled := dial()
	if !echo(stalled, 2*time.Second) {
		t.Fatal("pass again: no echo")
	}
	p.set(linkStall)
	if echo(stalled, 300*time.Millisecond) {
		t.Fatal("stall: an open connection forwards")
	}
	fresh := dial()
	if echo(fresh, 300*time.Millisecond) {
		t.Fatal("stall: a new connection forwards")
	}
	p.set(linkPass)
	if echo(stalled, time.Second) {
		t.Fatal("a connection stalled must not forward after the heal (its bytes were lost)")
	}
	if !echo(dial(), 2*time.Second) {
		t.Fatal("healed: a new connection does not forward")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
