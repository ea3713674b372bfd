// Package ctxsleep is a sleep that a context can cut short. The master's
// leader duties, the client's retries and the benches' simulated holders
// all wait this way; one copy keeps the timer stopped on every path.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, and reports whether it waited the
// whole d (false: ctx ended first).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
