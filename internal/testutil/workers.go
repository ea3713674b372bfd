package testutil

import "sync"

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
