package transport

import (
	"math/rand/v2"
	"time"
)

// Cluster client defaults.
const (
	DefaultMaxWait    = 15 * time.Second
	DefaultBackoffMin = 50 * time.Millisecond
	// An election on a LAN takes about a second; polling the cluster no
	// slower than every 250 ms keeps a client from adding most of another
	// second to a failover, and costs a few cheap NOT_LEADER answers.
	DefaultBackoffMax = 250 * time.Millisecond
)

// backoff is capped exponential backoff with equal jitter: each wait is
// half the current step plus a random part of the other half, so clients
// that failed together do not retry together.
type backoff struct {
	step, max time.Duration
}

func newBackoff(minStep, maxStep time.Duration) backoff {
	return backoff{step: minStep, max: maxStep}
}

// next returns the wait to use now and doubles the step for next time.
func (b *backoff) next() time.Duration {
	half := b.step / 2
	d := half
	if half > 0 {
		d += rand.N(half + 1)
	}
	b.step = min(2*b.step, b.max)
	return d
}
