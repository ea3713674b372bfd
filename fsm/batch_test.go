package fsm

import (
	"fmt"
	"strings"
	"testing"

	"sexton/api"
)

func (h *harness) startBatch(items ...PutStartItem) *PutStartBatchResult {
	h.t.Helper()
	return h.apply(&PutStartBatch{Items: items, Now: h.now}).(*PutStartBatchResult)
}

func (h *harness) endBatch(items ...PutEndItem) *PutEndBatchResult {
	h.t.Helper()
	return h.apply(&PutEndBatch{Items: items, Now: h.now}).(*PutEndBatchResult)
}

func localItem(key string, segs ...api.SegmentID) PutStartItem {
	return PutStartItem{Key: key, Size: 10, Replicas: localReplicas(segs...), PutID: "p-" + key}
}

func TestPutStartBatchPerItemResultsInOrderAndSharedIncarnation(t *testing.T) {
	h := newMounted(t, 100)
	r := h.startBatch(localItem("a", "s1"), localItem("", "s1"), localItem("b", "nope"), localItem("c", "s1"))
	if r.Err != nil || len(r.Items) != 4 {
		t.Fatalf("batch: %v, %d items", r.Err, len(r.Items))
	}
	want := api.ObjectIncarnation{High: 7, Low: h.index}
	if r.Items[0].Err != nil || r.Items[0].Incarnation != want || r.Items[3].Err != nil || r.Items[3].Incarnation != want {
		t.Fatalf("items 0 and 3: %+v %+v, want incarnation %s", r.Items[0], r.Items[3], want)
	}
	if codeOf(r.Items[1].Err) != api.CodeInvalidKey || codeOf(r.Items[2].Err) != api.CodeSegmentNotFound {
		t.Fatalf("items 1 and 2: %v, %v", r.Items[1].Err, r.Items[2].Err)
	}
	if _, p, _, _ := h.f.Stat("b"); p != nil {
		t.Fatalf("refused item b left a pending put %s", p)
	}
	e := h.endBatch(PutEndItem{"a", want}, PutEndItem{"b", want}, PutEndItem{"c", want})
	if e.Items[0].Err != nil || codeOf(e.Items[1].Err) != api.CodeObjectNotFound || e.Items[2].Err != nil {
		t.Fatalf("end batch: %+v", e.Items)
	}
	for _, k := range []string{"a", "c"} {
		if v, err := h.f.Get(k); err != nil || v.Incarnation != want {
			t.Fatalf("get %s: %+v, %v", k, v, err)
		}
	}
	// An overwrite batch: a later entry, a larger incarnation for each key;
	// the superseded copies get their delete tasks in the PutEndBatch.
	r2 := h.startBatch(localItem("c", "s1"), localItem("a", "s1"))
	inc2 := r2.Items[0].Incarnation
	if !want.Less(inc2) || r2.Items[1].Incarnation != inc2 {
		t.Fatalf("overwrite incarnations %+v, want one above %s", r2.Items, want)
	}
	e2 := h.endBatch(PutEndItem{"a", inc2}, PutEndItem{"c", inc2})
	if e2.Items[0].TasksCreated != 1 || e2.Items[1].TasksCreated != 1 {
		t.Fatalf("overwrite end: %+v, want one task per superseded copy", e2.Items)
	}
	tasks := h.fetch("s1", 1)
	if len(tasks) != 2 || tasks[0].Incarnation != want || tasks[1].Incarnation != want {
		t.Fatalf("tasks %+v, want the two superseded incarnations", tasks)
	}
}

func TestPutStartBatchDuplicateKeyRefusedWhole(t *testing.T) {
	h := newMounted(t, 100)
	r := h.startBatch(localItem("a", "s1"), localItem("b", "s1"), localItem("a", "s1"))
	if codeOf(r.Err) != api.CodeInvalidParams || r.Items != nil {
		t.Fatalf("duplicate batch: %+v", r)
	}
	for _, k := range []string{"a", "b"} {
		if _, p, _, _ := h.f.Stat(k); p != nil {
			t.Fatalf("refused batch left %s pending", k)
		}
	}
}

func TestPutStartBatchDFSFailureIsAtomic(t *testing.T) {
	h := newMounted(t, 100)
	h.dfsConfigure("bucket") // 4 buckets of 64 KiB
	before := h.dfsStats()
	dfsItem := func(k string) PutStartItem {
		return PutStartItem{Key: k, Size: 60 << 10, Replicas: dfsReplica()}
	}
	// Five 60 KiB objects need five buckets; only four may exist.
	r := h.startBatch(dfsItem("d0"), dfsItem("d1"), localItem("l", "s1"), dfsItem("d2"), dfsItem("d3"), dfsItem("d4"))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	for i, it := range r.Items {
		if i == 2 {
			if it.Err != nil {
				t.Fatalf("LOCAL_DISK item failed with the DFS batch: %v", it.Err)
			}
			continue
		}
		if it.Err == nil {
			t.Fatalf("DFS item %d started although the batch could not be allocated", i)
		}
		if _, p, _, _ := h.f.Stat(dfsItemKey(i)); p != nil {
			t.Fatalf("DFS item %d left a pending put", i)
		}
	}
	// The allocator's batch is atomic as the DFS design has it: a failure
	// returns no descriptor and tombstones every range it had reserved, so
	// nothing live or pending is left (the ranges are dead bytes, reclaimed
	// like any other).
	if after := h.dfsStats(); after.LiveEntries != before.LiveEntries || after.LiveBytes != before.LiveBytes {
		t.Fatalf("failed batch left live DFS entries:\n before %+v\n after  %+v", before, after)
	}
	for _, u := range h.dfsStats().Units {
		if u.PendingEntries != 0 || u.LiveEntries != 0 {
			t.Fatalf("unit %d holds entries after a failed batch: %+v", u.Unit, u)
		}
	}
	// Three fit (in a fresh cluster: the failed batch's dead buckets count
	// against the maximum until the leader deletes their files): each gets
	// its own range.
	h = newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure("bucket")
	ok := h.startBatch(dfsItem("d0"), dfsItem("d1"), dfsItem("d2"))
	seen := map[string]bool{}
	for i, it := range ok.Items {
		if it.Err != nil || len(it.Replicas) != 1 || it.Replicas[0].DFS == nil {
			t.Fatalf("item %d: %+v", i, it)
		}
		d := it.Replicas[0].DFS
		at := fmt.Sprintf("%s@%d", d.Path, d.Offset)
		if seen[at] {
			t.Fatalf("two items share %s", at)
		}
		seen[at] = true
	}
	e := h.endBatch(PutEndItem{"d0", ok.Items[0].Incarnation}, PutEndItem{"d1", ok.Items[1].Incarnation}, PutEndItem{"d2", ok.Items[2].Incarnation})
	for i, it := range e.Items {
		if it.Err != nil {
			t.Fatalf("end %d: %v", i, it.Err)
		}
	}
	if st := h.dfsStats(); st.LiveBytes < 3*(60<<10) {
		t.Fatalf("live bytes %d after three committed puts", st.LiveBytes)
	}
}

func dfsItemKey(i int) string {
	if i > 2 {
		i--
	}
	return "d" + string(rune('0'+i))
}

func TestPutBatchBounds(t *testing.T) {
	items := make([]PutStartItem, MaxBatchPutItems+1)
	for i := range items {
		items[i] = localItem("k", "s1")
	}
	if _, err := Encode(&PutStartBatch{Items: items}); err == nil || !strings.Contains(err.Error(), "items exceed") {
		t.Fatalf("oversized PutStartBatch encoded: %v", err)
	}
	if _, err := Encode(&PutEndBatch{Items: make([]PutEndItem, MaxBatchPutItems+1)}); err == nil {
		t.Fatal("oversized PutEndBatch encoded")
	}
	long := localItem(strings.Repeat("k", api.MaxKeyLen+1), "s1")
	if _, err := Encode(&PutStartBatch{Items: []PutStartItem{long}}); err == nil {
		t.Fatal("PutStartBatch with an oversized key encoded")
	}
}

// BenchmarkApplyPutBatch64 applies a PutStartBatch and a PutEndBatch of 64
// DFS objects each (fresh keys), reported per object.
func BenchmarkApplyPutBatch64(b *testing.B) {
	h := newHarness(b, 100)
	h.epoch(7)
	c := dfsSettings("shard")
	c.ShardCapacity = 1 << 40
	h.apply(&DFSConfigure{Settings: c, Now: h.now})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		items := make([]PutStartItem, 64)
		for j := range items {
			items[j] = PutStartItem{Key: fmt.Sprintf("k%d/%d", i, j), Size: 4096, Replicas: dfsReplica()}
		}
		r := h.startBatch(items...)
		if r.Items[0].Err != nil {
			b.Fatal(r.Items[0].Err)
		}
		ends := make([]PutEndItem, 64)
		for j := range ends {
			ends[j] = PutEndItem{Key: items[j].Key, Incarnation: r.Items[j].Incarnation}
		}
		h.endBatch(ends...)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/object")
}
