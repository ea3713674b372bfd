package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

// Every calls f again and again until stop closes, and never once the
// wait it returned has returned.
func TestEvery(t *testing.T) {
	var calls atomic.Int64
	stop := make(chan struct{})
	wait := Every(time.Millisecond, stop, func() { calls.Add(1) })
	WaitFor(t, 10*time.Second, func() bool { return calls.Load() >= 3 }, "three calls")
	close(stop)
	wait()
	after := calls.Load()
	time.Sleep(20 * time.Millisecond)
	if got := calls.Load(); got != after {
		t.Fatalf("%d calls after wait returned", got-after)
	}
}
