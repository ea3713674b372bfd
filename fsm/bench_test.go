package fsm

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"sexton/api"
)

// benchKey is a 32-byte key.
func benchKey(i int) string { return fmt.Sprintf("bench/object/%019d", i) }

type benchFSM struct {
	f     *FSM
	index uint64
}

func (b *benchFSM) apply(tb testing.TB, cmd Command) any {
	data, err := Encode(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	b.index++
	res, err := b.f.Apply(b.index, 1, data)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

func newBenchFSM(tb testing.TB, capacity int) *benchFSM {
	b := &benchFSM{f: newWithCapacity(capacity)}
	b.apply(tb, &EpochBegin{ClusterID: 7, LeaderID: "m1"})
	b.apply(tb, &MountLocalDisk{ClientID: "c1", Segment: "seg-0000-0000-0000-0001", Pool: "pool", Capabilities: tombstoneCaps, Endpoint: "h:1"})
	return b
}

var benchReplicas = []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "seg-0000-0000-0000-0001", Pool: "pool"}}

// put writes keys [from, to) as COMPLETE 1-replica objects.
func (b *benchFSM) put(tb testing.TB, from, to int) {
	for i := from; i < to; i++ {
		k := benchKey(i)
		r := b.apply(tb, &PutStart{PutStartItem: PutStartItem{Key: k, Size: 4096, Replicas: benchReplicas}, Now: int64(i)}).(*PutStartResult)
		if r.Err != nil {
			tb.Fatal(r.Err)
		}
		if e := b.apply(tb, &PutEnd{Key: k, Incarnation: r.Incarnation}).(*PutEndResult); e.Err != nil {
			tb.Fatal(e.Err)
		}
	}
}

// drain acks every task so the registry never fills during a benchmark.
func (b *benchFSM) drain(tb testing.TB) {
	for {
		ts, _, err := b.f.FetchTasks("seg-0000-0000-0000-0001", 1, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if len(ts) == 0 {
			return
		}
		rs := make([]api.TaskResult, len(ts))
		for i, t := range ts {
			rs[i] = api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation, Outcome: api.AckRemoved}
		}
		b.apply(tb, &LocalDeleteAck{Segment: "seg-0000-0000-0000-0001", Epoch: 1, Results: rs})
	}
}

// removeSessions says how a benchmark's Removes carry sessions.
type removeSessions int

const (
	noSession  removeSessions = iota
	oneSession                // the entry is one client's request
	spanPerKey                // a group commit: every key another client's request
)

func benchmarkRemove(b *testing.B, keysPerOp int, sessions removeSessions) {
	const round = 512 // ops between untimed refills
	bf := newBenchFSM(b, DefaultRegistryCapacity)
	entries := make([][]byte, round)
	seq := uint64(0)
	encodeRound := func() {
		seq++ // every round a new seq per client: never a repeat
		for op := 0; op < round; op++ {
			keys := make([]string, keysPerOp)
			for j := range keys {
				keys[j] = benchKey(op*keysPerOp + j)
			}
			cmd := &Remove{Keys: keys, Now: 1}
			switch sessions {
			case oneSession:
				cmd.Session = api.Session{ClientID: benchClient(op), Seq: seq, Floor: seq}
			case spanPerKey:
				for j := range keys {
					cmd.Spans = append(cmd.Spans, RemoveSpan{Session: api.Session{ClientID: benchClient(op*keysPerOp + j), Seq: seq, Floor: seq}, N: 1})
				}
			}
			data, err := Encode(cmd)
			if err != nil {
				b.Fatal(err)
			}
			entries[op] = data
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%round == 0 {
			b.StopTimer()
			bf.drain(b)
			bf.put(b, 0, round*keysPerOp)
			encodeRound()
			b.StartTimer()
		}
		bf.index++
		res, err := bf.f.Apply(bf.index, 1, entries[i%round])
		if err != nil {
			b.Fatal(err)
		}
		if r := res.(*RemoveResult); r.TasksCreated != keysPerOp {
			b.Fatalf("remove created %d tasks, want %d", r.TasksCreated, keysPerOp)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keysPerOp), "ns/key")
}

// benchClient is a client id the length of a UUID.
func benchClient(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }

func BenchmarkApplyRemove1Key(b *testing.B)             { benchmarkRemove(b, 1, noSession) }
func BenchmarkApplyRemove64Keys(b *testing.B)           { benchmarkRemove(b, 64, noSession) }
func BenchmarkApplyRemove1KeySession(b *testing.B)      { benchmarkRemove(b, 1, oneSession) }
func BenchmarkApplyRemove64KeysSession(b *testing.B)    { benchmarkRemove(b, 64, oneSession) }
func BenchmarkApplyRemove64KeysSpanPerKey(b *testing.B) { benchmarkRemove(b, 64, spanPerKey) }

// BenchmarkEncodeRemove encodes what the leader's group commit proposes
// at 16 clients x 64 keys: one Remove of 1,024 keys in 16 spans.
func BenchmarkEncodeRemove(b *testing.B) {
	cmd := &Remove{V: RemoveV2}
	for c := range 16 {
		for k := range 64 {
			cmd.Keys = append(cmd.Keys, fmt.Sprintf("bench/1796312272678750542/%08d", c*64+k))
		}
		cmd.Spans = append(cmd.Spans, RemoveSpan{Session: api.Session{ClientID: benchClient(c), Seq: 7}, N: 64})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(cmd); err != nil {
			b.Fatal(err)
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkHeapPerObject reports the live heap per stored 1-replica object
// with a 32-byte key, without and with a 36-byte (UUID) put id.
func BenchmarkHeapPerObject(b *testing.B) {
	const n = 200000
	for _, putID := range []string{"", "0b9c4e2a-1f3d-4c5e-9a7b-6d8e0f1a2b3c"} {
		b.Run(fmt.Sprintf("putid=%d", len(putID)), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				before := heapInUse()
				bf := newBenchFSM(b, DefaultRegistryCapacity)
				for j := 0; j < n; j++ {
					k := benchKey(j)
					r := bf.apply(b, &PutStart{PutStartItem: PutStartItem{Key: k, Size: 4096, Replicas: benchReplicas, PutID: putID}, Now: int64(j)}).(*PutStartResult)
					bf.apply(b, &PutEnd{Key: k, Incarnation: r.Incarnation})
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/n, "B/object")
				runtime.KeepAlive(bf)
			}
		})
	}
}

// The large-state benchmarks share one FSM of 1,000,000 objects and 50,000
// pending tasks; building it takes a few seconds, so it is built once, and
// only when one of them is selected.
const (
	largeObjects = 1000000
	largeTasks   = 50000
)

var (
	largeOnce sync.Once
	largeFSM  *benchFSM
)

func largeState(b *testing.B) *benchFSM {
	largeOnce.Do(func() {
		bf := newBenchFSM(b, DefaultRegistryCapacity)
		bf.put(b, 0, largeObjects+largeTasks)
		for i := 0; i < largeTasks; i += api.MaxBatchKeys {
			var keys []string
			for j := i; j < min(i+api.MaxBatchKeys, largeTasks); j++ {
				keys = append(keys, benchKey(largeObjects+j))
			}
			bf.apply(b, &Remove{Keys: keys, Now: 2})
		}
		largeFSM = bf
	})
	if s := largeFSM.f.Stats(); s.Objects < largeObjects || s.PendingTasks != largeTasks {
		b.Fatalf("large state has %d objects and %d tasks", s.Objects, s.PendingTasks)
	}
	return largeFSM
}

func BenchmarkSnapshotWrite(b *testing.B) {
	bf := largeState(b)
	runtime.GC() // start without the GC debt of building the state
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		n = writeSnapshot(b, bf.f)
	}
	b.ReportMetric(float64(n)/(1<<20), "MiB")
}

// BenchmarkSnapshotWriteDuringGC is BenchmarkSnapshotWrite while another
// goroutine allocates without pause, so that GC cycles run through the
// write as they do on a master whose heap is near its goal (at 10 M
// objects, most of the time): write barriers are on, and each node the
// Applies copy is scanned. Run it with GOGC=10.
func BenchmarkSnapshotWriteDuringGC(b *testing.B) {
	bf := largeState(b)
	runtime.GC()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ring := make([][]byte, 256)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ring[i%len(ring)] = make([]byte, 64<<10)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := bf.f.Snapshot()
		if _, err := v.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		v.Release()
	}
	b.StopTimer()
	close(stop)
	<-done
}

func BenchmarkSnapshotRead(b *testing.B) {
	bf := largeState(b)
	var buf bytes.Buffer
	v := bf.f.Snapshot()
	if _, err := v.WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	v.Release()
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g := New(Config{})
		if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
		if g.Stats().PendingTasks != largeTasks {
			b.Fatal("restore lost tasks")
		}
	}
	// And the heap a restored state holds, per object (restore fills the
	// COMPLETE tree in two passes so that their nodes are not left half full).
	b.StopTimer()
	before := heapInUse()
	g := New(Config{})
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		b.Fatal(err)
	}
	after := heapInUse()
	runtime.KeepAlive(g)
	runtime.KeepAlive(buf.Bytes())
	b.ReportMetric((float64(after)-float64(before))/float64(largeObjects+largeTasks), "B/object")
}

// BenchmarkSnapshotPause measures what a snapshot costs the apply loop:
// the time Snapshot() holds the lock, and the single Applies (a PutStart
// or PutEnd) in the 2,000 that follow (the first write to an index node
// after a snapshot copies it). It reports medians and maxima; on a loaded
// machine the maxima include scheduler and GC stalls that are not the
// FSM's.
func BenchmarkSnapshotPause(b *testing.B) {
	bf := largeState(b)
	var snaps, applies []time.Duration
	next := largeObjects + largeTasks
	timed := func(cmd Command) any {
		start := time.Now()
		res := bf.apply(b, cmd)
		applies = append(applies, time.Since(start))
		return res
	}
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		v := bf.f.Snapshot()
		snaps = append(snaps, time.Since(start))
		for j := 0; j < 1000; j++ {
			k := benchKey(next)
			next++
			r := timed(&PutStart{PutStartItem: PutStartItem{Key: k, Size: 1, Replicas: benchReplicas}}).(*PutStartResult)
			timed(&PutEnd{Key: k, Incarnation: r.Incarnation})
		}
		v.Release()
	}
	b.StopTimer()
	slices.Sort(snaps)
	slices.Sort(applies)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(snaps[len(snaps)/2]), "snapshot-p50-µs")
	b.ReportMetric(us(snaps[len(snaps)-1]), "snapshot-max-µs")
	b.ReportMetric(us(applies[len(applies)/2]), "apply-p50-µs")
	b.ReportMetric(us(applies[len(applies)*999/1000]), "apply-p999-µs")
	b.ReportMetric(us(applies[len(applies)-1]), "apply-max-µs")
}

// BenchmarkGCLargeState times one full garbage collection with the large
// state live: the mark work a master's heap costs the collector each
// cycle, which at ten million objects is what a busy leader spends most
// of its CPU on (docs/SCALING.md, "The fsm's memory and CPU").
func BenchmarkGCLargeState(b *testing.B) {
	bf := largeState(b)
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
	}
	b.StopTimer()
	runtime.KeepAlive(bf)
}

// BenchmarkDrainBacklog: a holder works off a backlog of n delete tasks
// the way the follow loop does (fetch a page, ack it, again); ns/task is
// the FSM's cost per task of the fetches and the acks. With the acked ids
// left at the front of the segment's queue until compaction, each fetch
// stepped over up to n/2 of them and the cost grew with the backlog.
func BenchmarkDrainBacklog(b *testing.B) {
	for _, n := range []int{20_000, 200_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bf := newBenchFSM(b, n)
			for b.Loop() {
				b.StopTimer()
				bf.put(b, 0, n)
				for i := 0; i < n; i += 64 {
					keys := make([]string, 0, 64)
					for j := i; j < min(i+64, n); j++ {
						keys = append(keys, benchKey(j))
					}
					bf.apply(b, &Remove{Keys: keys})
				}
				b.StartTimer()
				bf.drain(b)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
		})
	}
}

// BenchmarkSnapshotWriteBacklog writes a state whose holders have acked
// nothing for a while: 500,000 objects and 500,000 delete tasks, what a
// master holds halfway through `sexton bench remove` (whose segment does
// not ack) and what a mass delete leaves while holders work it off. The
// task section is then half of the snapshot's records.
func BenchmarkSnapshotWriteBacklog(b *testing.B) {
	const n = 1_000_000
	bf := newBenchFSM(b, n)
	bf.put(b, 0, n)
	for i := 0; i < n; i += 2 * api.MaxBatchKeys {
		keys := make([]string, 0, api.MaxBatchKeys)
		for j := i; j < min(i+api.MaxBatchKeys, n); j++ {
			keys = append(keys, benchKey(j))
		}
		bf.apply(b, &Remove{Keys: keys, Now: 2})
	}
	runtime.GC()
	var size int64
	for b.Loop() {
		size = writeSnapshot(b, bf.f)
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
	b.ReportMetric(float64(bf.f.Stats().PendingTasks), "tasks")
}

// benchPutCommit is the entry a one-commit put of one replica proposes,
// with a client session.
func benchPutCommit() *PutCommit {
	return &PutCommit{V: PutCommitV1, PutCommitItem: PutCommitItem{
		Key: "bench/1796312272678750542/00000042", Incarnation: api.ObjectIncarnation{High: 3, Low: 1 << 40},
		Size: 4096, Replicas: localReplicas("seg-h1-0"), PutID: "0f9a3c2e-5d41-4b7a-9c1e-2a6b8d4f1e77"},
		Session: api.Session{ClientID: benchClient(1), Seq: 42, Floor: 41}, Now: 1796312272678750542}
}

// BenchmarkEncodePutCommit is the leader's encoding of one put's entry.
func BenchmarkEncodePutCommit(b *testing.B) {
	cmd := benchPutCommit()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePutCommit is every node's decoding of one put's entry.
func BenchmarkDecodePutCommit(b *testing.B) {
	data, err := Encode(benchPutCommit())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// writeSnapshot writes a snapshot of f to nowhere and returns its size.
func writeSnapshot(b *testing.B, f *FSM) int64 {
	v := f.Snapshot()
	defer v.Release()
	n, err := v.WriteTo(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
