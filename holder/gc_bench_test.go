package holder

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sexton/api"
)

// The GC benchmarks; their figures are in docs/SCALING.md ("The write
// path"). Run them with
//
//	go test -run '^$' -bench BenchmarkGC -benchtime 3x ./holder/
//
// Every number is reported as a metric of one benchmark, so each pair
// (GC vs the disk, GC vs idle) is measured side by side in one run.

// benchObj is one object of a benchmark store.
type benchObj struct {
	key string
	inc api.ObjectIncarnation
}

// benchStore is a store plus the objects in it, filled through group commit.
type benchStore struct {
	b    *testing.B
	s    *Store
	n    uint64
	live []benchObj
	user int64 // value bytes put
}

func newBenchStore(b *testing.B, opts StoreOptions) *benchStore {
	s := openT(b, b.TempDir(), opts)
	b.Cleanup(func() { s.Close() })
	return &benchStore{b: b, s: s}
}

// put stores n objects of size bytes, writers at a time, and returns them.
func (bs *benchStore) put(n, size, writers int) []benchObj {
	objs := make([]benchObj, n)
	for i := range objs {
		bs.n++
		objs[i] = benchObj{key: "k" + strconv.FormatUint(bs.n, 10), inc: incN(bs.n)}
	}
	val := bytes.Repeat([]byte{0xa5}, size)
	for start := 0; start < n; start += writers {
		var wg sync.WaitGroup
		for _, o := range objs[start:min(start+writers, n)] {
			wg.Add(1)
			go func(o benchObj) {
				defer wg.Done()
				v := append([]byte(o.key+"|"), val[:size-len(o.key)-1]...)
				if err := bs.s.Put(o.key, "t", o.inc, v); err != nil {
					bs.b.Error(err)
				}
			}(o)
		}
		wg.Wait()
	}
	bs.live = append(bs.live, objs...)
	bs.user += int64(n * size)
	return objs
}

// kill tombstones objs and drops them from the live list.
func (bs *benchStore) kill(objs []benchObj) {
	dead := make(map[benchObj]bool, len(objs))
	for start := 0; start < len(objs); start += api.MaxFetchLimit {
		batch := objs[start:min(start+api.MaxFetchLimit, len(objs))]
		tasks := make([]api.LocalDeleteTask, len(batch))
		for i, o := range batch {
			tasks[i] = task(bs.s, uint64(i), o.key, o.inc)
			dead[o] = true
		}
		for _, r := range bs.s.BatchMarkDeleted(tasks) {
			if r.Outcome != api.AckRemoved {
				bs.b.Fatalf("tombstone: %v", r.Outcome)
			}
		}
	}
	bs.live = slices.DeleteFunc(bs.live, func(o benchObj) bool { return dead[o] })
}

// runGC runs passes until nothing qualifies.
func runGC(s *Store, w *gcWorker) {
	for {
		r := s.GCStats().Rounds
		w.pass()
		if s.GCStats().Rounds == r {
			return
		}
	}
}

// BenchmarkGCWriteAmplification reports, per workload, GC bytes copied ÷
// bytes reclaimed and (user + GC bytes written) ÷ user bytes.
//
//   - die-together: objects written together (one bucket's worth) are
//     deleted together; GC should copy nothing.
//   - uniform: a steady live set where each new object replaces a random
//     live one; greedy victims at ratio ≥ r bound copied ÷ reclaimed by
//     (1−r)/r = 3 at r = 0.25.
//   - hot-cold: 90% of replacements hit 10% of the objects.
func BenchmarkGCWriteAmplification(b *testing.B) {
	const (
		objSize = 16 << 10
		perB    = 64 // objects per bucket: 1 MiB buckets
		liveN   = 2048
		rounds  = 6144 // replacements after the initial fill
	)
	for _, wl := range []string{"die-together", "uniform", "hot-cold", "uniform/age-aware", "hot-cold/age-aware"} {
		ageAware := strings.HasSuffix(wl, "/age-aware")
		wl := strings.TrimSuffix(wl, "/age-aware")
		name := map[bool]string{false: wl, true: wl + "-age-aware"}[ageAware]
		b.Run(name, func(b *testing.B) {
			var copied, reclaimed, user, spaceAmp, samples float64
			for i := 0; i < b.N; i++ {
				bs := newBenchStore(b, StoreOptions{BucketKeysLimit: perB})
				o := DefaultGCOptions()
				o.AgeAware = ageAware
				w := newGCWorker(bs.s, o, nil)
				rng := rand.New(rand.NewPCG(1, uint64(i)))
				switch wl {
				case "die-together":
					for range rounds / perB {
						bs.put(perB, objSize, perB)
						if len(bs.live) > liveN {
							g := rng.IntN(len(bs.live)/perB - 1) // a whole group, never the open one
							bs.kill(slices.Clone(bs.live[g*perB : (g+1)*perB]))
							runGC(bs.s, w)
							u := bs.s.Usage()
							spaceAmp += float64(u.UsedBytes) / float64(u.LiveBytes)
							samples++
						}
					}
				default:
					bs.put(liveN, objSize, 64)
					hot := liveN / 10
					for step := 0; step < rounds; step += 64 {
						var victims []benchObj
						picked := map[int]bool{}
						for len(victims) < 64 {
							j := rng.IntN(len(bs.live))
							if wl == "hot-cold" && rng.IntN(10) != 0 {
								j = len(bs.live) - 1 - rng.IntN(hot) // the newest objects are hot
							}
							if !picked[j] {
								picked[j] = true
								victims = append(victims, bs.live[j])
							}
						}
						bs.kill(victims)
						bs.put(64, objSize, 64)
						runGC(bs.s, w)
						u := bs.s.Usage()
						spaceAmp += float64(u.UsedBytes) / float64(u.LiveBytes)
						samples++
					}
				}
				st := bs.s.GCStats()
				copied += float64(st.BytesCopied)
				reclaimed += float64(st.BytesReclaimed)
				user += float64(bs.user)
			}
			b.ReportMetric(copied/max(reclaimed, 1), "gc-copied/reclaimed")
			b.ReportMetric((user+copied)/user, "written/user")
			b.ReportMetric(copied/float64(b.N)/1e6, "gc-copied-MB")
			b.ReportMetric(spaceAmp/max(samples, 1), "used/live")
		})
	}
}

// BenchmarkGCGetLatency measures Get p50/p99 on an idle store and on the
// same store while GC merges half-dead buckets continuously.
func BenchmarkGCGetLatency(b *testing.B) {
	const objSize = 64 << 10
	var idle, busy []time.Duration
	for i := 0; i < b.N; i++ {
		bs := newBenchStore(b, StoreOptions{BucketKeysLimit: 64})
		bs.put(64*32, objSize, 64) // 32 buckets of 4 MiB
		rng := rand.New(rand.NewPCG(2, uint64(i)))
		get := func() time.Duration {
			o := bs.live[rng.IntN(len(bs.live))]
			start := time.Now()
			if _, err := bs.s.Get(o.key, o.inc); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		for range 4000 {
			idle = append(idle, get())
		}
		var dead []benchObj
		for j, o := range bs.live[:64*31] {
			if j%2 == 0 {
				dead = append(dead, o)
			}
		}
		bs.kill(dead) // the Gets below only read the survivors
		done := make(chan struct{})
		go func() {
			runGC(bs.s, newGCWorker(bs.s, DefaultGCOptions(), nil))
			close(done)
		}()
		n := 0
	loop:
		for {
			select {
			case <-done:
				break loop
			default:
				busy = append(busy, get())
				n++
			}
		}
		if n < 100 {
			b.Logf("only %d Gets overlapped the GC", n)
		}
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(pct(idle, 0.5), "idle-p50-µs")
	b.ReportMetric(pct(idle, 0.99), "idle-p99-µs")
	b.ReportMetric(pct(busy, 0.5), "gc-p50-µs")
	b.ReportMetric(pct(busy, 0.99), "gc-p99-µs")
	b.ReportMetric(float64(len(busy))/float64(b.N), "gets-during-gc")
}
