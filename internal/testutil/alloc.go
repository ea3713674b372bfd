package testutil

import "runtime"

// AllocatedDuring returns the bytes the heap handed out while f ran (after
// a collection, so that f's own allocations stand out).
func AllocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
