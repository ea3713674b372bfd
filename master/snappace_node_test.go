package master

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sexton/fsm"
	"sexton/raftio"
)

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
	size := n.rfsm.meter.LastSnapBytes.Load()
	want := time.Duration(float64(size) / rate * float64(time.Second))
	if size < 2<<10 || took < want*9/10 {
		t.Fatalf("a %d-byte snapshot at %d bytes/s took %v, want at least %v", size, rate, took, want)
	}
	t.Logf("a %d-byte snapshot at %d bytes/s took %v", size, rate, took)
}

// niceSink is a raft.SnapshotSink that records the nice value of the
// thread at each write.
type niceSink struct {
	bytes.Buffer
	nice []int
}

func (s *niceSink) Write(p []byte) (int, error) {
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		return 0, err
	}
	s.nice = append(s.nice, 20-prio) // the raw syscall returns 20 - nice
	return s.Buffer.Write(p)
}
func (s *niceSink) ID() string    { return "nice" }
func (s *niceSink) Cancel() error { return nil }
func (s *niceSink) Close() error  { return nil }

// TestPersistWritesInBackground: the snapshots a master takes itself go
// through WriteInBackground.
func TestPersistWritesInBackground(t *testing.T) {
	r := &raftFSM{f: fsm.New(fsm.Config{}), wake: newWakeups()}
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &niceSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.nice) == 0 || sink.nice[0] != raftio.SnapshotWriterNice {
		t.Fatalf("Persist wrote at nice %v, want %d", sink.nice, raftio.SnapshotWriterNice)
	}
}
