package holder

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sexton/api"
)

// fillConcurrently puts keys with `writers` goroutines so setup rides on
// group commit instead of one fsync per record.
func fillConcurrently(b *testing.B, s *Store, keys []string, incs []api.ObjectIncarnation, size int) {
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := s.Put(keys[i], "t", incs[i], valueOf(keys[i], size)); err != nil {
				b.Error(err)
			}
		}(i)
	}
	wg.Wait()
}

// benchBatch puts 256 fresh records into 8 fresh buckets of 32 and returns
// tasks for all of them, interleaved across buckets as a fetch delivers them.
func benchBatch(b *testing.B, s *Store, n *uint64) []api.LocalDeleteTask {
	keys := make([]string, 256)
	incs := make([]api.ObjectIncarnation, 256)
	for j := range keys {
		*n++
		keys[j] = fmt.Sprintf("bench-%d", *n)
		incs[j] = incN(*n)
	}
	for j := 0; j < 256; j += 32 {
		fillConcurrently(b, s, keys[j:j+32], incs[j:j+32], 128)
	}
	tasks := make([]api.LocalDeleteTask, 256)
	for j := range tasks {
		k := (j%8)*32 + j/8
		tasks[j] = task(s, uint64(j), keys[k], incs[k])
	}
	return tasks
}

// persistOnce times one tmp → fsync → rename → dir fsync of a 32-record
// bucket's metadata (with its tombstones set, as BatchMarkDeleted writes it).
func persistOnce(b *testing.B, s *Store, id uint64) time.Duration {
	bk := s.buckets[id]
	bk.persistMu.Lock()
	defer bk.persistMu.Unlock()
	s.mu.Lock()
	m := bk.meta.clone()
	s.mu.Unlock()
	for i := range m.Objects {
		m.Objects[i].Tombstoned = true
	}
	start := time.Now()
	if _, err := s.persistMeta(id, m, tombstonePoints); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkBatchMarkDeleted256Over8Buckets measures one BatchMarkDeleted of
// 256 tasks spread over 8 buckets (32 each): 8 metadata persistences. Each
// iteration also times one bare persistence sequence on a ninth bucket set
// up the same way, in the same directory, and reports the ratio (goal ≈ 8).
func BenchmarkBatchMarkDeleted256Over8Buckets(b *testing.B) {
	s := openT(b, b.TempDir(), StoreOptions{BucketKeysLimit: 32})
	defer s.Close()
	var n uint64
	var batch, seq time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tasks := benchBatch(b, s, &n)
		b.StartTimer()
		start := time.Now()
		rs := s.BatchMarkDeleted(tasks)
		batch += time.Since(start)
		b.StopTimer()
		for _, r := range rs {
			if r.Outcome != api.AckRemoved {
				b.Fatalf("outcome %v", r.Outcome)
			}
		}
		// The companion: one sequence on a bucket prepared identically.
		one := benchBatch(b, s, &n)[:1]
		seq += persistOnce(b, s, bucketOf(b, s, one[0].Key, one[0].Incarnation))
		b.StartTimer()
	}
	b.ReportMetric(float64(seq.Nanoseconds())/float64(b.N), "seq-ns/op")
	b.ReportMetric(float64(batch)/float64(seq), "batch/seq")
}

// BenchmarkMetaPersistSequence is one write tmp → fsync → rename → dir
// fsync of a 32-record metadata file in a store directory: the unit cost
// BatchMarkDeleted pays once per affected bucket. Each iteration persists a
// bucket freshly filled like the ones of the batch benchmark.
func BenchmarkMetaPersistSequence(b *testing.B) {
	s := openT(b, b.TempDir(), StoreOptions{BucketKeysLimit: 32})
	defer s.Close()
	var n uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		keys := make([]string, 32)
		incs := make([]api.ObjectIncarnation, 32)
		for j := range keys {
			n++
			keys[j] = fmt.Sprintf("persist-%d", n)
			incs[j] = incN(n)
		}
		fillConcurrently(b, s, keys, incs, 128)
		b.StartTimer()
		persistOnce(b, s, bucketOf(b, s, keys[0], incs[0]))
	}
}

// BenchmarkPut4KiB measures durable 4 KiB puts with 1, 8 and 16
// concurrent writers; puts/s is the figure of merit (group commit should
// make many writers far faster than 1). raw-fdatasync-ns is the disk's
// own cost of the same append: a 4 KiB write and fdatasync to a plain
// file in the same directory, measured in the same run.
func BenchmarkPut4KiB(b *testing.B) {
	for _, writers := range []int{1, 8, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			dir := b.TempDir()
			s := openT(b, dir, StoreOptions{})
			defer s.Close()
			value := valueOf("v", 4096)
			b.SetBytes(4096)
			var next uint64
			var mu sync.Mutex
			claim := func() (uint64, bool) {
				mu.Lock()
				defer mu.Unlock()
				if next >= uint64(b.N) {
					return 0, false
				}
				next++
				return next, true
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i, ok := claim()
						if !ok {
							return
						}
						if err := s.Put(fmt.Sprintf("put-%d", i), "t", incN(i), value); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "puts/s")
			if writers == 1 {
				b.ReportMetric(float64(rawAppendSync(b, dir, 4096, 200).Nanoseconds()), "raw-fdatasync-ns")
			}
		})
	}
}

// BenchmarkPut4KiBFullBucket measures single-writer 4 KiB puts into a
// bucket that already holds `keys` records (BucketKeysLimit 10000, so
// nothing rolls): a put whose metadata cost grows with the bucket shows
// here as the keys=4000 case being slower than keys=10.
func BenchmarkPut4KiBFullBucket(b *testing.B) {
	for _, keys := range []int{10, 4000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			s := openT(b, b.TempDir(), StoreOptions{BucketKeysLimit: MaxBucketKeysLimit})
			defer s.Close()
			ks := make([]string, keys)
			incs := make([]api.ObjectIncarnation, keys)
			for j := range ks {
				ks[j] = fmt.Sprintf("fill-%d", j)
				incs[j] = incN(uint64(j + 1))
			}
			for j := 0; j < keys; j += 256 {
				fillConcurrently(b, s, ks[j:min(j+256, keys)], incs[j:min(j+256, keys)], 64)
			}
			if b.N+keys > MaxBucketKeysLimit {
				b.Fatalf("b.N %d too large for a bucket of %d keys (use -benchtime Nx)", b.N, MaxBucketKeysLimit-keys)
			}
			value := valueOf("v", 4096)
			b.SetBytes(4096)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Put(fmt.Sprintf("put-%d", i), "t", incN(uint64(keys+i+1)), value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPut16MiB measures durable 16 MiB puts (Store.Put), one at a
// time, against the disk's sequential write rate measured in the same
// iteration: the same bytes appended to a plain file in 1 MiB writes,
// then fdatasync.
// put/seqwrite is the figure of merit (goal ≥ 0.7).
func BenchmarkPut16MiB(b *testing.B) {
	const size = 16 << 20
	dir := b.TempDir()
	s := openT(b, dir, StoreOptions{})
	defer s.Close()
	value := valueOf("v", size)
	rw := newRawWriter(b, dir)
	b.SetBytes(size)
	var put, raw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := s.Put(fmt.Sprintf("big-%d", i), "t", incN(uint64(i+1)), value); err != nil {
			b.Fatal(err)
		}
		put += time.Since(start)
		b.StopTimer()
		raw += rw.write(value)
		b.StartTimer()
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * size / d.Seconds() / 1e6 }
	b.ReportMetric(mbps(put), "put-MB/s")
	b.ReportMetric(mbps(raw), "seqwrite-MB/s")
	b.ReportMetric(float64(raw)/float64(put), "put/seqwrite")
}

// rawAppendSync is the mean time of n appends of size bytes, each followed
// by fdatasync, to a fresh plain file in dir.
func rawAppendSync(b *testing.B, dir string, size, n int) time.Duration {
	f, err := os.CreateTemp(dir, "raw-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := valueOf("r", size)
	start := time.Now()
	for i := range n {
		if _, err := f.WriteAt(buf, int64(i*size)); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// rawWriter appends values to one plain file in 1 MiB writes, each
// value followed by fdatasync: the disk's sequential write rate for the
// same append pattern as a bucket file.
type rawWriter struct {
	b   *testing.B
	f   *os.File
	off int64
}

func newRawWriter(b *testing.B, dir string) *rawWriter {
	f, err := os.CreateTemp(dir, "raw-*")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close(); os.Remove(f.Name()) })
	return &rawWriter{b: b, f: f}
}

// write appends v and fdatasyncs it, and returns the time taken.
func (w *rawWriter) write(v []byte) time.Duration {
	start := time.Now()
	for off := 0; off < len(v); off += 1 << 20 {
		if _, err := w.f.WriteAt(v[off:min(off+1<<20, len(v))], w.off+int64(off)); err != nil {
			w.b.Fatal(err)
		}
	}
	if err := unix.Fdatasync(int(w.f.Fd())); err != nil {
		w.b.Fatal(err)
	}
	w.off += int64(len(v))
	return time.Since(start)
}
