package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// minLive is the least live heap the percent is computed against: the
// runtime's own least heap goal, 4 MiB at GOGC=100, which it scales by
// the percent. Computed against less (at start, before any cycle, the
// live heap reads 0), the percent would scale that minimum past the live
// heap plus the floor: a 256 MiB floor over a 1 MiB heap is 25,600 %,
// and 4 MiB × 256 is a first goal of 1 GiB.
const minLive = 4 << 20

// maxPercent bounds the percent a floor sets: SetGCPercent takes an int32.
const maxPercent = 1 << 30

// Percent is the GC percent that makes the next cycle start after the heap
// grows by the larger of floor and base percent of live. base < 0 (GOGC=off)
// and floor 0 return base unchanged.
func Percent(live, floor uint64, base int) int {
	if base < 0 || floor == 0 {
		return base
	}
	live = max(live, minLive)
	growth := max(live/100*uint64(base), floor)
	p := (growth*100 + live - 1) / live
	return int(min(max(p, uint64(base)), maxPercent))
}

// Floor is a running heap floor. Stop it to give the process back its GOGC.
type Floor struct {
	floor uint64
	base  int

	mu      sync.Mutex // orders set against Stop
	stopped bool
	percent atomic.Int64  // the percent last set
	cycles  atomic.Uint64 // adjustments made: one at Start, one per cycle after
}

// sentinel is allocated once per cycle and never referenced: its cleanup
// runs after the cycle that found it unreachable. It holds a pointer so
// that it is not a tiny allocation, whose cleanups may never run.
type sentinel struct {
	_ *byte
	_ [8]byte
}

// Start sets the floor for this process and keeps it after every cycle
// until Stop. floor 0, or GOGC=off, starts a Floor that changes nothing.
func Start(floor uint64) *Floor {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	f := &Floor{floor: floor, base: base}
	f.percent.Store(int64(base))
	if Percent(minLive, floor, base) == base {
		return f
	}
	f.adjust()
	return f
}

// Stop restores the GC percent the process started with.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	debug.SetGCPercent(f.base)
	f.percent.Store(int64(f.base))
}

// Base is the GC percent the process had when the floor started (GOGC).
func (f *Floor) Base() int { return f.base }

// Current is the GC percent the floor set last.
func (f *Floor) Current() int { return int(f.percent.Load()) }

// adjust sets the percent for the live heap the last cycle found and arms
// the next cycle's sentinel.
func (f *Floor) adjust() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.cycles.Add(1)
	p := Percent(liveHeap(), f.floor, f.base)
	if int64(p) != f.percent.Load() {
		debug.SetGCPercent(p)
		f.percent.Store(int64(p))
	}
	runtime.AddCleanup(&sentinel{}, func(f *Floor) { f.adjust() }, f)
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// liveHeap is the heap the last cycle marked live (0 before the first).
func liveHeap() uint64 {
	s := []metrics.Sample{liveSample[0]}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
