package dfsalloc

import (
	"strconv"
	"testing"
)

// benchKeys are distinct keys, so shard placement spreads like real traffic.
func benchKeys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "tenant/object/" + strconv.Itoa(i)
	}
	return ks
}

// BenchmarkAllocate measures Allocate alone with the default settings
// (64 × 4 GiB shards, or 1 GiB buckets, 4 KiB alignment) and 16 KiB values,
// in batches of 1 and 64. The allocator is replaced, untimed, before it
// fills, so every op runs against a realistic but bounded state.
func BenchmarkAllocate(b *testing.B) {
	const perState = 1 << 14 // entries per allocator before it is replaced
	for _, kind := range []string{KindShard, KindBucket} {
		for _, batch := range []int{1, 64} {
			b.Run(kind+"/batch"+strconv.Itoa(batch), func(b *testing.B) {
				cfg := benchConfig(kind, 1<<10)
				keys := benchKeys(perState)
				reqs := make([]Request, perState)
				for i := range reqs {
					reqs[i] = Request{Key: keys[i], Size: 16 << 10}
				}
				a, _ := New(cfg)
				used := 0
				now := t0
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if used+batch > perState {
						b.StopTimer()
						a, _ = New(cfg)
						used = 0
						b.StartTimer()
					}
					if _, err := a.Allocate(reqs[used:used+batch], now); err != nil {
						b.Fatal(err)
					}
					used += batch
					now += 1000
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "objects/s")
			})
		}
	}
}

// BenchmarkPutCycle is the steady state of a cache: allocate, commit, and
// free the object allocated 4096 puts earlier, so live state stays bounded.
// For the shard allocator the 30 s deferral is crossed every 30,000 ops.
func BenchmarkPutCycle(b *testing.B) {
	for _, kind := range []string{KindShard, KindBucket} {
		b.Run(kind, func(b *testing.B) {
			cfg := benchConfig(kind, 1<<20)
			keys := benchKeys(4096)
			a, _ := New(cfg)
			live := make([]EntryRef, len(keys))
			now := t0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				slot := i % len(keys)
				if live[slot].Key != "" {
					if err := a.Free(live[slot].Key, live[slot].Desc, now); err != nil {
						b.Fatal(err)
					}
				}
				ds, err := a.Allocate([]Request{{Key: keys[slot], Size: 16 << 10}}, now)
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Commit(keys[slot], ds[0], now); err != nil {
					b.Fatal(err)
				}
				live[slot] = EntryRef{Key: keys[slot], Desc: ds[0]}
				now += 1e6 // 1 ms per put
				if kind == KindBucket && i%4096 == 0 {
					plan := a.PlanEviction(now, nil)
					if _, err := a.ApplyEviction(plan, now, nil); err != nil {
						b.Fatal(err)
					}
					for _, op := range a.PendingFileOps() {
						if op.Kind == FileDelete {
							_ = a.ConfirmFileDeleted(op.Unit)
						} else {
							_ = a.ConfirmFileCreated(op.Unit)
						}
					}
				}
			}
		})
	}
}

// BenchmarkRecordsRestore measures a snapshot of 100,000 entries out
// (Records, which the FSM runs under its lock) and back in (Restore).
func BenchmarkRecordsRestore(b *testing.B) {
	for _, kind := range []string{KindShard, KindBucket} {
		b.Run(kind, func(b *testing.B) {
			cfg := benchConfig(kind, 1<<10)
			a, _ := New(cfg)
			keys := benchKeys(100_000)
			for i := 0; i < len(keys); i += 64 {
				batch := make([]Request, 0, 64)
				for _, k := range keys[i:min(i+64, len(keys))] {
					batch = append(batch, Request{Key: k, Size: 16 << 10})
				}
				if _, err := a.Allocate(batch, t0); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("records", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					_ = a.Records()
				}
			})
			recs := a.Records()
			b.Run("restore", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					r, _ := New(cfg)
					if err := r.Restore(recs); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// benchConfig is the default configuration of allocator kind with room
// for maxBuckets buckets.
func benchConfig(kind string, maxBuckets int) Config {
	cfg := DefaultConfig()
	cfg.Allocator = kind
	cfg.MaxBucketCount = maxBuckets
	return cfg
}
