package raftio

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// probeSink is a raft.SnapshotSink that records, at each write, the nice
// value of the thread writing and whether the goroutine it started at the
// write before has run since (it can only have on GOMAXPROCS 1 if the
// writer yielded its P).
type probeSink struct {
	bytes.Buffer
	nice    []int
	probe   chan struct{}
	yielded int
}

func (s *probeSink) Write(p []byte) (int, error) {
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		return 0, err
	}
	s.nice = append(s.nice, 20-prio) // the raw syscall returns 20 - nice
	if s.probe != nil {
		select {
		case <-s.probe:
			s.yielded++
		default:
		}
	}
	probe := make(chan struct{})
	s.probe = probe
	go func() { close(probe) }()
	return s.Buffer.Write(p)
}
func (s *probeSink) ID() string    { return "probe" }
func (s *probeSink) Cancel() error { return nil }
func (s *probeSink) Close() error  { return nil }

// chunkedWriterTo writes n chunks of 1 KiB, as the fsm's snapshot writer
// writes its 1 MiB chunks.
type chunkedWriterTo int

func (n chunkedWriterTo) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for range n {
		k, err := w.Write(make([]byte, 1<<10))
		total += int64(k)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// TestWriteInBackground: a snapshot's writer runs at nice 19 and yields
// its P before every write, so a goroutine made runnable meanwhile runs
// before the next chunk is encoded, and the thread of the caller keeps
// its priority.
func TestWriteInBackground(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sink := &probeSink{}
	n, err := WriteInBackground(chunkedWriterTo(64), sink)
	if err != nil || n != 64<<10 {
		t.Fatalf("wrote %d bytes, %v; want %d", n, err, 64<<10)
	}
	for i, nice := range sink.nice {
		if nice != SnapshotWriterNice {
			t.Fatalf("write %d ran at nice %d, want %d", i, nice, SnapshotWriterNice)
		}
	}
	// Gosched does not promise that the probe runs first: one schedule
	// in 61 takes from the global run queue, where the writer waits,
	// before the local one. Without the yield no probe runs at all.
	if writes := len(sink.nice) - 1; sink.yielded < writes/2 {
		t.Fatalf("a goroutine woken at a write ran before the next one at %d of %d writes, want at least half", sink.yielded, writes)
	}
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid()); err != nil || 20-prio != 0 {
		t.Fatalf("the caller's thread is at nice %d (%v) after the write, want 0", 20-prio, err)
	}
	// The niced thread ends with its goroutine, and no thread the runtime
	// started meanwhile inherited its nice value: none is left to run the
	// master's other goroutines at nice 19.
	deadline := time.Now().Add(2 * time.Second)
	for {
		niced := nicedThreads(t)
		if len(niced) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads still niced after the write: %v", niced)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nicedThreads lists this process's threads whose nice value is not 0,
// from /proc/self/task/*/stat (field 19), leaving out the main thread:
// Go does not end the main thread when a goroutine locked to it returns
// but parks it for good (runtime.mexit), so it runs nothing again.
func nicedThreads(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	mainThread := fmt.Sprintf("/proc/self/task/%d/stat", os.Getpid())
	var niced []string
	for _, p := range stats {
		if p == mainThread {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread has ended
		}
		// The command name, in parentheses, may hold spaces: count the
		// fields after its closing parenthesis (field 3 onwards).
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 17 {
			t.Fatalf("%s: %q has too few fields", p, b)
		}
		if f[16] != "0" {
			niced = append(niced, p+": nice "+f[16])
		}
	}
	return niced
}
