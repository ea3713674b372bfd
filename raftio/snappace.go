package raftio

import (
	"io"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// writePacer holds a snapshot's writer to a rate (--raft-snapshot-write-
// rate). The writer is the fsm's encoder: held back, it also spreads its
// CPU over a longer time. On this two-core box a 10 M-object snapshot is
// 1.7 GB, written in ~3 s at ~550 MB/s while it takes most of a core,
// and the removes' p99 during it was 10–14 ms (1.4–2.7× idle); at 200
// MiB/s it takes ~8 s and the p99 was 6.9–17.4 ms over three runs, 9.4
// by the median against 12.3 unpaced: better, not always
// (docs/SCALING.md, "Snapshots"). Only snapshots this master takes are paced (in
// fsmSnapshot.Persist), not one a leader sends it: a follower catching
// up is of no use until it has it. TiKV paces its snapshots the same way
// (snap-io-max-bytes-per-sec). Once the master is stopping it paces no
// more: raft's shutdown waits for a snapshot being persisted, and that
// wait should be the disk's, not the pacer's.
type writePacer struct {
	rate  int64 // bytes per second
	start time.Time
	now   func() time.Time
	sleep func(time.Duration)
	stop  <-chan struct{} // closed: write at full speed from now on
	paced int64           // bytes at the last check
	every int64           // bytes between checks
}

// newWritePacer paces a write to rate bytes a second from now until stop
// is closed; nil (no pacing) for a rate of 0.
func newWritePacer(rate int64, stop <-chan struct{}) *writePacer {
	if rate <= 0 {
		return nil
	}
	return &writePacer{rate: rate, start: time.Now(), now: time.Now, sleep: time.Sleep, stop: stop, every: min(rate/64, 1<<20) + 1}
}

// wrote sleeps until n bytes are due at the pacer's rate. It looks at
// the clock once per every bytes, not on each write; a sleep is at most
// about every bytes' worth (1/64 s, or 1 MiB's).
func (p *writePacer) wrote(n int64) {
	if p == nil || n-p.paced < p.every {
		return
	}
	select {
	case <-p.stop:
		return
	default:
	}
	p.paced = n
	due := time.Duration(float64(n) / float64(p.rate) * float64(time.Second))
	if ahead := due - p.now().Sub(p.start); ahead > 0 {
		p.sleep(ahead)
	}
}

// pacedWriter is an io.Writer held to a writePacer's rate.
type pacedWriter struct {
	w    io.Writer
	pace *writePacer
	n    int64
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	k, err := w.w.Write(p)
	w.n += int64(k)
	w.pace.wrote(w.n)
	return k, err
}

// PacedWriter is w held to rate bytes a second until stop is closed; w
// itself for a rate of 0.
func PacedWriter(w io.Writer, rate int64, stop <-chan struct{}) io.Writer {
	if pace := newWritePacer(rate, stop); pace != nil {
		return &pacedWriter{w: w, pace: pace}
	}
	return w
}

// SnapshotWriterNice is the nice value of the thread that encodes and
// writes a snapshot the master takes itself (WriteInBackground).
const SnapshotWriterNice = 19

// WriteInBackground writes v to w as background work: on an OS thread of
// its own at nice SnapshotWriterNice, yielding its P before every write.
// A snapshot's encoder is CPU work that no client waits for, on a box
// where the masters' Raft and RPC goroutines are what the clients wait
// for. Two things let it get in their way, and each is taken out here:
//
//   - The kernel shares the cores among threads by weight; at nice 19
//     the encoder's weight is 15 against 1024, so a woken Raft or RPC
//     thread of any master takes the core from it at once.
//   - Go preempts a running goroutine only every 10 ms, so a goroutine
//     made runnable while the encoder holds a P could wait that long.
//     The encoder writes a 1 MiB chunk at a time (~2 ms of encoding),
//     and yields before each one.
//
// Measured at 10 M objects, the masters restarted into each build on
// one cluster (docs/SCALING.md, "Snapshots"): the removes' p99
// during snapshots by the median went from 9.6–10.6 ms to 8.4 in one
// comparison and from 12.4 to 11.4 in another; a modest gain, kept
// because it costs nothing.
//
// The thread is never unlocked: Go ends it when the goroutine returns,
// or parks it for good if it is the process's main thread (an
// unprivileged process could not lower its nice value back). Threads
// the runtime starts meanwhile do not inherit the nice value: a locked
// thread has its new threads cloned by Go's template thread, started at
// LockOSThread before the nice value is set (checked on a running
// cluster: every master thread at nice 0 after snapshots). If the
// priority cannot be set, the write goes on at the thread's own.
func WriteInBackground(v io.WriterTo, w io.Writer) (n int64, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), SnapshotWriterNice)
		n, err = v.WriteTo(&yieldingWriter{w: w})
	}()
	<-done
	return n, err
}

// yieldingWriter yields the goroutine's P before each write (WriteInBackground).
type yieldingWriter struct{ w io.Writer }

func (y *yieldingWriter) Write(p []byte) (int, error) {
	runtime.Gosched()
	return y.w.Write(p)
}
