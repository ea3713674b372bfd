package heapfloor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		live, floor uint64
		base, want  int
	}{
		{"small heap: the floor", 64 * mib, 256 * mib, 100, 400},
		{"floor not a multiple: rounded up", 100 * mib, 256 * mib, 100, 256},
		{"heap as large as the floor: GOGC", 256 * mib, 256 * mib, 100, 100},
		{"large heap: GOGC", 4096 * mib, 256 * mib, 100, 100},
		{"large heap, GOGC=400: GOGC", 1024 * mib, 256 * mib, 400, 400},
		{"small heap, GOGC=50: the floor", 128 * mib, 256 * mib, 50, 200},
		{"no live heap yet: counted as the runtime's 4 MiB", 0, 256 * mib, 100, 6400},
		{"floor 0: GOGC", 64 * mib, 0, 100, 100},
		{"GOGC=off: off", 64 * mib, 256 * mib, -1, -1},
		{"huge floor: bounded", 0, 1 << 50, 100, maxPercent},
	} {
		if got := Percent(c.live, c.floor, c.base); got != c.want {
			t.Errorf("%s: Percent(%d MiB, %d MiB, %d) = %d, want %d", c.name, c.live/mib, c.floor/mib, c.base, got, c.want)
		}
	}
}

// keep holds a live heap of a few MiB while churn allocates garbage.
var keep [][]byte

// churn allocates total bytes of garbage in 64 KiB pieces and returns how
// many collections ran meanwhile.
func churn(total int) uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	var sink []byte
	for done := 0; done < total; done += 64 << 10 {
		sink = make([]byte, 64<<10)
		sink[0] = 1
	}
	_ = sink
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

// With a small live heap, 512 MiB of garbage costs GOGC=100 a collection
// every few MiB and a 32 MiB floor one every 32 MiB or so, cycle after
// cycle (a floor set only at Start, or on every other cycle, collects far
// more often); after Stop the process has its GOGC back for good.
func TestFloorCutsCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	keep = [][]byte{make([]byte, 4<<20)}
	defer func() { keep = nil }()
	runtime.GC()

	without := churn(512 << 20)
	// A full cycle with nothing allocating, so the live heap Start reads
	// is the 4 MiB kept and not what churn allocated during a concurrent
	// mark (under CPU contention, tens of MiB).
	runtime.GC()
	f := Start(32 << 20)
	defer f.Stop() // a failure below must not leave the floor on for the next test
	if f.Base() != 100 {
		t.Fatalf("Base = %d, want the process's 100", f.Base())
	}
	if c := f.Current(); c < 32*100/8 {
		t.Fatalf("Current = %d right after Start, want the floor's percent (≥ 400 for 32 MiB over ≤ 8 MiB live)", c)
	}
	with := churn(512 << 20)
	f.Stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("after Stop the GC percent is %d, want GOGC's 100 back", p)
	}
	// A cleanup armed before Stop may still run: it must not set the
	// floor again.
	for range 3 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("after Stop and three cycles the GC percent is %d, want GOGC's 100", p)
	}
	after := churn(512 << 20)
	// Only the count with the floor is bounded: a floor of 32 MiB allows
	// at most 16 cycles for 512 MiB, whatever the machine does. Counts
	// without one fall when the machine is busy (what churn allocates
	// during a slow concurrent mark counts as live: measured 10 to 86 with
	// two other processes spinning), so they are only logged.
	t.Logf("collections for 512 MiB of garbage: %d without a floor, %d with 32 MiB, %d after Stop", without, with, after)
	if with > 20 {
		t.Fatalf("with a 32 MiB floor %d collections, want at most 20 (512 MiB / 32 MiB, and slack)", with)
	}
}

// The floor follows the live heap: once the heap is larger than the floor,
// the percent goes back to GOGC's after the next cycle.
func TestFloorFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	keep = nil
	runtime.GC()
	f := Start(32 << 20)
	defer f.Stop()
	if c := f.Current(); c <= 100 {
		t.Fatalf("Current = %d with a small heap, want above GOGC's 100", c)
	}
	keep = make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20)) // 64 MiB live, twice the floor
	}
	defer func() { keep = nil }()
	deadline := time.Now().Add(10 * time.Second)
	for f.Current() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("Current = %d with 64 MiB live and a 32 MiB floor, want GOGC's 100", f.Current())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// The runtime's heap goal is the live heap plus the floor, from the start
// (before a cycle has measured the live heap), after each of several
// cycles (a floor set on every other cycle fails here every time), and
// after the live heap grows.
func TestFloorHeapGoal(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const floor = 32 << 20
	keep = nil
	runtime.GC()
	f := Start(floor)
	defer f.Stop()
	check := func(when string) {
		t.Helper()
		s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
		t.Logf("%s: live %.1f MiB, goal %.1f MiB, percent %d", when, float64(live)/(1<<20), float64(goal)/(1<<20), f.Current())
		if lo, hi := live+floor*9/10, max(live, minLive)+floor+2<<20; goal < lo || goal > hi {
			t.Fatalf("%s: heap goal %d with %d live and a %d floor, want within [%d, %d]", when, goal, live, floor, lo, hi)
		}
	}
	check("at start")
	// Cycle after cycle, not only once: wait for each cycle's adjustment.
	for i := range 5 {
		n := f.cycles.Load()
		runtime.GC()
		deadline := time.Now().Add(10 * time.Second)
		for f.cycles.Load() == n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		check(fmt.Sprintf("after forced cycle %d", i+1))
	}
	keep = make([][]byte, 0, 16)
	for range 16 {
		keep = append(keep, make([]byte, 1<<20))
	}
	defer func() { keep = nil }()
	before := f.Current()
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for f.Current() == before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	check("with 16 MiB live")
}

// GOGC=off stays off: the floor changes nothing.
func TestFloorLeavesGCOffAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f := Start(128 << 20)
	defer f.Stop()
	if p := debug.SetGCPercent(-1); p != -1 || f.Current() != -1 {
		t.Fatalf("with GOGC=off the percent became %d (Current %d), want -1", p, f.Current())
	}
}
