package revokegate

import (
	"sync"
	"time"
)

// Gate holds back the discard of abandoned puts while the delete
// registry has no room for their tasks: a refused PutRevoke would be
// proposed again every tick for every abandoned put. The zero Gate is
// open.
type Gate struct {
	mu       sync.Mutex
	until    time.Time // no revoke before this, unless room appeared
	tasks    int       // pending tasks when the registry was last full
	capacity int       // registry capacity then
	failures int
}

// Revocation refused for a full registry is retried after
// revokeBackoffMin, doubling up to revokeBackoffMax, or as soon as the
// registry holds fewer tasks or has more capacity than when it refused.
const (
	revokeBackoffMin = time.Second
	revokeBackoffMax = time.Minute
)

// RevokeOpen reports whether abandoned puts may be revoked now, given the
// registry's pending tasks and capacity.
func (g *Gate) RevokeOpen(tasks, capacity int, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failures == 0 || !now.Before(g.until) || tasks < g.tasks || capacity > g.capacity
}

// RevokeFull records that a revoke was refused for a full registry.
func (g *Gate) RevokeFull(tasks, capacity int, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failures++
	g.tasks, g.capacity = tasks, capacity
	g.until = now.Add(min(revokeBackoffMin<<min(g.failures-1, 16), revokeBackoffMax))
}

// RevokeFailures is how many revokes the gate has refused in a row.
func (g *Gate) RevokeFailures() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failures
}

// RevokeDone reopens the gate after a revoke went through.
func (g *Gate) RevokeDone() {
	g.mu.Lock()
	g.until, g.tasks, g.capacity, g.failures = time.Time{}, 0, 0, 0
	g.mu.Unlock()
}
