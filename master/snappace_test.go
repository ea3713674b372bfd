package master

import (
	"fmt"
	"testing"
	"time"
)

// TestWritePacer: the pacer sleeps until the bytes written are due at its
// rate, counts the time the writer spent on its own, and sleeps neither
// when the writer is behind nor once the master is stopping.
func TestWritePacer(t *testing.T) {
	clock := time.Unix(0, 0)
	var slept time.Duration
	stop := make(chan struct{})
	p := newWritePacer(1000, stop)
	p.start, p.now, p.every = clock, func() time.Time { return clock }, 16
	p.sleep = func(d time.Duration) { slept += d; clock = clock.Add(d) }

	p.wrote(500) // due at 0.5 s, the clock at 0
	if slept != 500*time.Millisecond {
		t.Fatalf("after 500 bytes at 1000/s from t=0: slept %v, want 500ms", slept)
	}
	clock = clock.Add(200 * time.Millisecond) // the writer's own time
	p.wrote(1000)                             // due at 1 s, the clock at 0.7 s
	if slept != 800*time.Millisecond {
		t.Fatalf("after 1000 bytes: slept %v in all, want 800ms", slept)
	}
	p.wrote(1010) // under every bytes since the last check: no look at the clock
	clock = clock.Add(2 * time.Second)
	p.wrote(1500) // due at 1.5 s, the clock at 3 s: behind, no sleep
	if slept != 800*time.Millisecond {
		t.Fatalf("a writer behind its rate slept: %v in all, want 800ms", slept)
	}
	close(stop)
	p.wrote(5000) // due at 5 s, the clock at 3 s, but the master is stopping
	if slept != 800*time.Millisecond {
		t.Fatalf("a stopping master's pacer slept: %v in all, want 800ms", slept)
	}
	if newWritePacer(0, nil) != nil {
		t.Fatal("rate 0 made a pacer")
	}
	var none *writePacer
	none.wrote(1 << 30) // unpaced: a no-op
}

// TestSnapshotWriteRate: a master given a snapshot write rate takes at
// least its snapshot's size over that rate to take one.
func TestSnapshotWriteRate(t *testing.T) {
	const rate = 8 << 10
	tc := startCluster(t, 1, func(c *Config) { c.SnapshotInterval = time.Hour; c.SnapshotWriteRate = rate })
	n := tc.waitLeader(t)
	tc.mountHolder(t, "seg-a", "")
	for i := range 40 {
		tc.put(t, fmt.Sprintf("paced/%03d", i), 10, 1)
	}
	start := time.Now()
	if err := n.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	size := n.rfsm.meter.lastSnapBytes.Load()
	want := time.Duration(float64(size) / rate * float64(time.Second))
	if size < 2<<10 || took < want*9/10 {
		t.Fatalf("a %d-byte snapshot at %d bytes/s took %v, want at least %v", size, rate, took, want)
	}
	t.Logf("a %d-byte snapshot at %d bytes/s took %v", size, rate, took)
}
