package testutil

import (
	"sync"
	"time"
)

// RunWorkers starts workers goroutines and returns a function that waits
// for them all. For each w in [0, workers) it calls start(w) before the
// goroutine starts (so start may fail the test, and open what the worker
// needs); the goroutine then calls the step start returned with n = 0, 1,
// … until stop is closed or step returns false, and last the done it
// returned (nil for none).
func RunWorkers(workers int, stop <-chan struct{}, start func(w int) (step func(n int) bool, done func())) (wait func()) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		step, done := start(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if done != nil {
				defer done()
			}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if !step(n) {
					return
				}
			}
		}()
	}
	return wg.Wait
}

// Every calls f once every interval (the first time one interval after
// the call) in a goroutine until stop is closed, and returns a function
// that waits for the goroutine to end.
func Every(interval time.Duration, stop <-chan struct{}, f func()) (wait func()) {
	tick := time.NewTicker(interval)
	return RunWorkers(1, stop, func(int) (func(int) bool, func()) {
		return func(int) bool {
			select {
			case <-stop:
				return false
			case <-tick.C:
			}
			f()
			return true
		}, tick.Stop
	})
}
