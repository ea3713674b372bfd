package transport

import (
	"context"
	"sync"

	"sexton/api"
)

// Pool keeps one connection per address, dialling on first use and again
// after a connection fails. Concurrent calls to one address share its
// connection (and one dial). Failed dials are not remembered: backing off
// is the caller's business (ClusterClient does it).
type Pool struct {
	cfg ClientConfig

	mu     sync.Mutex
	conns  map[string]*poolEntry
	closed bool
}

// poolEntry is an address's connection, or the dial in progress for it.
type poolEntry struct {
	ready chan struct{} // closed when the dial finished
	conn  *Conn         // set before ready closes; nil if the dial failed
	err   error
}

// NewPool returns an empty pool dialling with cfg.
func NewPool(cfg ClientConfig) *Pool {
	return &Pool{cfg: cfg.withDefaults(), conns: make(map[string]*poolEntry)}
}

func errPoolClosed() *api.Error {
	return api.Errorf(api.CodeUnavailable, "connection pool closed")
}

// Call calls method on addr's connection. A connection found dead before
// the request was sent is replaced and the call made once more; a call
// that may have reached the server is never repeated here.
func (p *Pool) Call(ctx context.Context, addr, method string, req, resp any) error {
	_, err := p.call(ctx, addr, method, req, resp)
	return err
}

func (p *Pool) call(ctx context.Context, addr, method string, req, resp any) (outcome, error) {
	for attempt := 0; ; attempt++ {
		c, fresh, err := p.get(ctx, addr)
		if err != nil {
			return notSent, err
		}
		out, err := c.call(ctx, method, req, resp)
		if err != nil && !c.Alive() {
			p.drop(addr, c)
			if out == notSent && !fresh && attempt == 0 && ctx.Err() == nil {
				continue // a stale connection; the request never left
			}
		}
		return out, err
	}
}

// get returns addr's live connection, dialling if there is none; fresh
// reports that this call dialled it.
func (p *Pool) get(ctx context.Context, addr string) (*Conn, bool, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, errPoolClosed()
		}
		e, ok := p.conns[addr]
		if !ok {
			e = &poolEntry{ready: make(chan struct{})}
			p.conns[addr] = e
			p.mu.Unlock()
			p.dial(ctx, addr, e)
			if e.err != nil {
				return nil, false, e.err
			}
			return e.conn, true, nil
		}
		p.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, false, contextError(ctx, "waiting to connect to "+addr)
		}
		if e.conn != nil && e.conn.Alive() {
			return e.conn, false, nil
		}
		if e.conn != nil {
			p.drop(addr, e.conn)
		}
		if e.err != nil {
			return nil, false, e.err // the dial we waited for just failed
		}
	}
}

func (p *Pool) dial(ctx context.Context, addr string, e *poolEntry) {
	c, err := Dial(ctx, addr, p.cfg)
	p.mu.Lock()
	switch {
	case err != nil:
		e.err = err
		if p.conns[addr] == e {
			delete(p.conns, addr)
		}
	case p.closed:
		e.err = errPoolClosed()
		p.mu.Unlock()
		close(e.ready)
		c.Close()
		return
	default:
		e.conn = c
	}
	p.mu.Unlock()
	close(e.ready)
}

// drop forgets addr's connection if it is still c, and closes c.
func (p *Pool) drop(addr string, c *Conn) {
	p.mu.Lock()
	if e, ok := p.conns[addr]; ok && e.conn == c {
		delete(p.conns, addr)
	}
	p.mu.Unlock()
	c.Close()
}

// Close closes every connection; later calls fail with UNAVAILABLE. A dial
// in progress finishes and is closed at once.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	entries := p.conns
	p.conns = make(map[string]*poolEntry)
	p.mu.Unlock()
	for _, e := range entries {
		select {
		case <-e.ready:
			if e.conn != nil {
				e.conn.Close()
			}
		default:
			// Dialling; dial sees closed and closes the result.
		}
	}
}
