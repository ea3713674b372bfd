package fsm

import (
	"fmt"
	"math/rand"
	"testing"
)

// indexBenchSizes are the object counts the index benchmarks compare: a
// page's cost must not grow with them.
var indexBenchSizes = []int{100000, 1000000}

// indexStates holds one FSM per size, built on first use (a million
// objects take a few seconds to apply).
var indexStates = map[int]*benchFSM{}

func indexState(b *testing.B, n int) *benchFSM {
	if bf := indexStates[n]; bf != nil {
		return bf
	}
	bf := newBenchFSM(b, DefaultRegistryCapacity)
	bf.put(b, 0, n)
	indexStates[n] = bf
	return bf
}

// BenchmarkListPage lists one page of 100 keys from a random cursor.
func BenchmarkListPage(b *testing.B) {
	for _, n := range indexBenchSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			bf := indexState(b, n)
			rng := rand.New(rand.NewSource(1))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if objs, _ := bf.f.List("bench/", benchKey(rng.Intn(n-100)), 100); len(objs) != 100 {
					b.Fatalf("page of %d objects", len(objs))
				}
			}
		})
	}
}

// BenchmarkPendingPuts asks for the 10 oldest of 1,000 puts in progress
// among the objects.
func BenchmarkPendingPuts(b *testing.B) {
	const pending, stale = 1000, 10
	for _, n := range indexBenchSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			bf := indexState(b, n)
			from := int64(1 << 40)
			if bf.f.Stats().PendingPuts == 0 {
				for j := range pending {
					r := bf.apply(b, &PutStart{PutStartItem: PutStartItem{Key: fmt.Sprintf("bench/pending/%015d", j), Size: 1, Replicas: benchReplicas}, Now: from + int64(j)}).(*PutStartResult)
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if pp := bf.f.PendingPuts(from + stale); len(pp) != stale {
					b.Fatalf("%d stale puts, want %d", len(pp), stale)
				}
			}
		})
	}
}

// BenchmarkApplyChurnLarge removes a random key of a million-object state
// and puts it back (Remove, PutStart, PutEnd): what keeping the index
// costs Apply when keys arrive and leave in random order. The segment
// does not advertise tombstones, so no task is created and the registry
// never fills.
func BenchmarkApplyChurnLarge(b *testing.B) {
	const n = 1000000
	bf := &benchFSM{f: newWithCapacity(DefaultRegistryCapacity)}
	bf.apply(b, &EpochBegin{ClusterID: 7, LeaderID: "m1"})
	bf.apply(b, &MountLocalDisk{ClientID: "c1", Segment: "seg-0000-0000-0000-0001", Pool: "pool", Endpoint: "h:1"})
	perm := rand.New(rand.NewSource(1)).Perm(n)
	for _, i := range perm { // random arrival order, as in production
		k := benchKey(i)
		r := bf.apply(b, &PutStart{PutStartItem: PutStartItem{Key: k, Size: 1, Replicas: benchReplicas}}).(*PutStartResult)
		bf.apply(b, &PutEnd{Key: k, Incarnation: r.Incarnation})
	}
	rng := rand.New(rand.NewSource(2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := benchKey(rng.Intn(n))
		if r := bf.apply(b, &Remove{Keys: []string{k}}).(*RemoveResult); r.Results[0].Err != nil {
			b.Fatal(r.Results[0].Err)
		}
		r := bf.apply(b, &PutStart{PutStartItem: PutStartItem{Key: k, Size: 1, Replicas: benchReplicas}}).(*PutStartResult)
		if e := bf.apply(b, &PutEnd{Key: k, Incarnation: r.Incarnation}).(*PutEndResult); e.Err != nil {
			b.Fatal(e.Err)
		}
	}
}
