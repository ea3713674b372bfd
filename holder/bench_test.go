package holder

import (
	"fmt"
	"sync"
	"testing"
	"time"

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

// BenchmarkBatchMarkDeleted256Over8Buckets measures one BatchMarkDeleted of
// 256 tasks spread over 8 buckets (32 each): 8 metadata persistences.
// Compare with BenchmarkMetaPersistSequence: the ratio should be near 8.
func BenchmarkBatchMarkDeleted256Over8Buckets(b *testing.B) {
	s := openT(b, b.TempDir(), StoreOptions{BucketKeysLimit: 32})
	defer s.Close()
	var n uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		keys := make([]string, 256)
		incs := make([]api.ObjectIncarnation, 256)
		tasks := make([]api.LocalDeleteTask, 256)
		for j := range keys {
			n++
			keys[j] = fmt.Sprintf("bench-%d", n)
			incs[j] = incN(n)
		}
		// Sequential buckets of 32: put in order so each bucket holds 32.
		for j := 0; j < 256; j += 32 {
			fillConcurrently(b, s, keys[j:j+32], incs[j:j+32], 128)
		}
		// Interleave tasks across buckets, as a fetch would deliver them.
		for j := range tasks {
			k := (j%8)*32 + j/8
			tasks[j] = task(s, uint64(j), keys[k], incs[k])
		}
		b.StartTimer()
		rs := s.BatchMarkDeleted(tasks)
		b.StopTimer()
		for _, r := range rs {
			if r.Outcome != api.AckRemoved {
				b.Fatalf("outcome %v", r.Outcome)
			}
		}
		b.StartTimer()
	}
}

// BenchmarkMetaPersistSequence is one write tmp → fsync → rename → dir
// fsync of a 32-record metadata file in a store directory: the unit cost
// BatchMarkDeleted pays once per affected bucket.
func BenchmarkMetaPersistSequence(b *testing.B) {
	s := openT(b, b.TempDir(), StoreOptions{BucketKeysLimit: 32})
	defer s.Close()
	keys := make([]string, 32)
	incs := make([]api.ObjectIncarnation, 32)
	for j := range keys {
		keys[j] = fmt.Sprintf("persist-%d", j)
		incs[j] = incN(uint64(j + 1))
	}
	fillConcurrently(b, s, keys, incs, 128)
	bk := s.buckets[s.openID]
	bk.persistMu.Lock()
	defer bk.persistMu.Unlock()
	s.mu.Lock()
	m := bk.meta.clone()
	s.mu.Unlock()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.persistMeta(bk.id, m, tombstonePoints); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut4KiB measures durable 4 KiB puts with 1 and 16 concurrent
// writers; puts/s is the figure of merit (group commit should make 16
// writers far faster than 1).
func BenchmarkPut4KiB(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openT(b, b.TempDir(), StoreOptions{})
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
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "puts/s")
		})
	}
}
