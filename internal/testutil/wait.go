package testutil

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor checks its condition: short enough that
// a test does not wait much past the moment it holds, long enough that a
// condition which takes a lock or an RPC does not load the machine.
const pollEvery = 10 * time.Millisecond

// WaitFor polls cond until it holds and fails the test if timeout passes
// first, naming what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pollEvery)
	}
}
