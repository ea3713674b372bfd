package integration

import (
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy the nemesis puts in front of one directed
// link: a master dialing one peer's Raft address, anyone dialing one
// master's RPC address, a client dialing one holder. Each link is its own
// proxy, so cutting the proxy that master A dials B through, and not the
// one B dials A through, is a one-way partition.
//
// A small proxy of our own rather than toxiproxy: the three states below
// are all the nemesis needs, and toxiproxy's Go package would bring its
// HTTP API, metrics and logging dependencies into the module for them.
type faultProxy struct {
	name     string
	addr     string // where it listens
	upstream string // where it forwards

	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	state   linkState
	changed chan struct{} // closed and replaced on every state change
	conns   map[*proxyConn]struct{}
	closed  bool
}

type linkState int

const (
	// linkPass forwards bytes both ways.
	linkPass linkState = iota
	// linkDrop closes every connection and refuses new ones at once:
	// the dialer sees a reset, as when a host is down.
	linkDrop
	// linkStall accepts connections and forwards nothing in either
	// direction, on new and existing connections: the dialer sees
	// timeouts, as when packets are lost. Connections stalled are closed
	// when the link passes again.
	linkStall
)

func (s linkState) String() string {
	switch s {
	case linkDrop:
		return "drop"
	case linkStall:
		return "stall"
	}
	return "pass"
}

type proxyConn struct {
	down       net.Conn
	closedDown chan struct{}

	mu     sync.Mutex
	up     net.Conn
	closed bool
}

func (c *proxyConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.down.Close()
	if c.up != nil {
		c.up.Close()
	}
	close(c.closedDown)
}

// setUp records the upstream connection, or reports that c was closed
// meanwhile (the caller then closes up).
func (c *proxyConn) setUp(up net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.up = up
	return true
}

// startFaultProxy listens on a port of the package's range and forwards
// to upstream; it is closed when the test ends.
func startFaultProxy(t *testing.T, name, upstream string) *faultProxy {
	t.Helper()
	addr := freePort(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy %s: %v", name, err)
	}
	p := &faultProxy{name: name, addr: addr, upstream: upstream, ln: ln, changed: make(chan struct{}), conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed || p.state == linkDrop {
			p.mu.Unlock()
			down.Close()
			continue
		}
		c := &proxyConn{down: down, closedDown: make(chan struct{})}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *faultProxy) serve(c *proxyConn) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	// A connection accepted while stalled waits, unforwarded, for the
	// link to change; then it is closed like every stalled one.
	if !p.awaitPass(c) {
		return
	}
	up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		return
	}
	if !c.setUp(up) {
		up.Close()
		return
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() { defer pipes.Done(); p.pipe(c, up, c.down) }()
	go func() { defer pipes.Done(); p.pipe(c, c.down, up) }()
	pipes.Wait()
}

// pipe copies src to dst while the link passes.
func (p *faultProxy) pipe(c *proxyConn, dst, src net.Conn) {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.awaitPass(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// awaitPass reports whether c may forward now: at once when the link
// passes; false when it is dropped; when stalled it blocks until the
// state changes or c is closed, and then says false, since the bytes held
// meanwhile are lost.
func (p *faultProxy) awaitPass(c *proxyConn) bool {
	p.mu.Lock()
	st, ch, closed := p.state, p.changed, p.closed
	p.mu.Unlock()
	switch {
	case closed, st == linkDrop:
		return false
	case st == linkPass:
		return true
	}
	select {
	case <-ch:
	case <-c.closedDown:
	}
	return false
}

// set changes the link's state; dropping closes every open connection.
func (p *faultProxy) set(s linkState) {
	p.transition(func() bool { return p.state == s }, func() bool {
		p.state = s
		return s == linkDrop
	})
}

func (p *faultProxy) close() {
	if p.transition(func() bool { return p.closed }, func() bool {
		p.closed = true
		return true
	}) {
		p.ln.Close()
		p.wg.Wait()
	}
}

// transition runs apply under the lock unless already says the proxy is
// there, wakes the connections waiting for a change, and closes every
// open connection when apply says so. It reports whether apply ran.
func (p *faultProxy) transition(already func() bool, apply func() (closeAll bool)) bool {
	p.mu.Lock()
	if already() {
		p.mu.Unlock()
		return false
	}
	closeAll := apply()
	close(p.changed)
	p.changed = make(chan struct{})
	var kill []*proxyConn
	if closeAll {
		for c := range p.conns {
			kill = append(kill, c)
		}
	}
	p.mu.Unlock()
	for _, c := range kill {
		c.close()
	}
	return true
}
