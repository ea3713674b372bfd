package fsm

import (
	"fmt"
	"sync"
	"testing"

	"sexton/api"
)

// TestDuplicateDurableTasksDoNotConsumeCapacity: a task that is already in
// the registry (written by an earlier entry, here planted the way a
// restored snapshot would carry it) is not created again and costs no slot
// when a Remove needs the same (segment, key, incarnation).
func TestDuplicateDurableTasksDoNotConsumeCapacity(t *testing.T) {
	h := newMounted(t, 2)
	h.mustMount("c2", "s2", tombstoneCaps...)
	incA := h.put("a", "s1", "s2")
	incB := h.put("b", "s1")

	// Plant durable tasks for a@s1 and b@s1: the registry is full (2/2).
	st := h.f.st
	st.reg.insertRestored([]*task{
		{id: st.newTaskID(), seg: "s1", key: "a", tenant: api.DefaultTenant, inc: incA, created: 1},
		{id: st.newTaskID(), seg: "s1", key: "b", tenant: api.DefaultTenant, inc: incB, created: 1},
	})

	// b needs only its s1 task, which exists: it fits although the
	// registry is full, and nothing is added.
	r := h.remove("b")
	if codeOf(r.Results[0].Err) != "" || r.TasksCreated != 0 {
		t.Fatalf("remove b = %+v, want ok with no new task", r)
	}
	// a needs s1 (exists, free) and s2 (new, one slot): registry full.
	r = h.remove("a")
	if codeOf(r.Results[0].Err) != api.CodeLocalDeleteRegistryFull {
		t.Fatalf("remove a = %+v, want LOCAL_DELETE_REGISTRY_FULL", r)
	}
	if !h.f.Exists("a") {
		t.Fatal("a was touched by a failed Remove")
	}
	// Free b's slot: now a needs exactly one new slot and fits.
	if got := h.ackAll("s1", 1, api.AckRemoved, h.fetch("s1", 1)[1:]); got.Dropped != 1 {
		t.Fatalf("ack b = %+v", got)
	}
	r = h.remove("a")
	if codeOf(r.Results[0].Err) != "" || r.TasksCreated != 1 {
		t.Fatalf("remove a = %+v, want ok with one new task", r)
	}
	tasks, total := h.f.ListTasks("", 0)
	if total != 2 || taskKeys(tasks) != "s1/a@4 s2/a@4" {
		t.Fatalf("tasks = %s (total %d)", taskKeys(tasks), total)
	}
}

// TestFetchIsBoundedAndPages: at most 256 per call, more reported, id
// order kept.
func TestFetchIsBoundedAndPages(t *testing.T) {
	h, e := newMountedEpoch(t, 1000)
	h.putRemoved("s1", 300)
	got, more, err := h.f.FetchTasks("s1", e, 1000)
	if err != nil || len(got) != api.MaxFetchLimit || !more {
		t.Fatalf("fetch = %d tasks, more=%v, err=%v", len(got), more, err)
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID {
			t.Fatal("fetch not in id order")
		}
	}
	h.ackAll("s1", e, api.AckRemoved, got)
	rest, more, _ := h.f.FetchTasks("s1", e, 0)
	if len(rest) != 300-api.MaxFetchLimit || more {
		t.Fatalf("second fetch = %d tasks, more=%v", len(rest), more)
	}
	small, more, _ := h.f.FetchTasks("s1", e, 10)
	if len(small) != 10 || !more {
		t.Fatalf("limit 10 = %d, more=%v", len(small), more)
	}
}

// TestQueriesRaceApply: queries, snapshots and snapshot writes from many
// goroutines while Apply runs (run with -race); every query sees a
// consistent state.
func TestQueriesRaceApply(t *testing.T) {
	h, e := newMountedEpoch(t, 1000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if v, err := h.f.Get("k"); err == nil && len(v.Replicas) != 1 {
					t.Error("object without its replica")
				}
				h.f.List("", "", 10)
				_, _, _ = h.f.FetchTasks("s1", e, 0)
				h.f.Stats()
				v := h.f.Snapshot()
				if _, err := v.WriteTo(discard{}); err != nil {
					t.Error(err)
				}
				v.Release()
			}
		}()
	}
	for i := 0; i < 200; i++ {
		h.put("k", "s1")
		h.remove("k")
		h.ackAll("s1", e, api.AckRemoved, h.fetch("s1", e))
	}
	close(stop)
	wg.Wait()
}

// TestSnapshotViewIsFrozen: writes after Snapshot() do not show in the view.
func TestSnapshotViewIsFrozen(t *testing.T) {
	h := newMounted(t, 100)
	h.put("a", "s1")
	want := snapshotBytes(t, h.f)
	v := h.f.Snapshot()
	h.put("b", "s1")
	h.remove("a")
	h.put("a", "s1")
	got := writeView(t, v)
	if string(got) != string(want) {
		t.Fatal("the view changed after later Applies")
	}
	if _, err := v.WriteTo(discard{}); err != nil {
		t.Fatalf("second write of the view: %v", err)
	}
	v.Release()
	if _, err := v.WriteTo(discard{}); err == nil {
		t.Fatal("write of a released view succeeded")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestSegQueueCutsItsDeadPrefix: a holder working off a backlog acks in
// the order it fetched, and the ids it acked leave the front of its
// segment's queue at once, so the next fetch does not step over them
// (with them left until compaction, a fetch at a backlog of n stepped over
// up to n/2). A task withheld at the front keeps the dead behind it until
// compaction, and every fetch still answers the live tasks in id order.
func TestSegQueueCutsItsDeadPrefix(t *testing.T) {
	h, e := newMountedEpoch(t, 5000)
	var keys []string
	for i := range 1000 {
		k := fmt.Sprintf("k%04d", i)
		h.put(k, "s1")
		keys = append(keys, k)
	}
	h.remove(keys...)
	q := h.f.st.reg.bySeg["s1"]

	// Ack 400 in fetch order: fewer dead than live, so no compaction.
	for acked := 0; acked < 400; {
		ts := h.fetch("s1", e)
		ts = ts[:min(len(ts), 400-acked)]
		h.ackAll("s1", e, api.AckRemoved, ts)
		acked += len(ts)
	}
	if q.live != 600 || len(q.ids) != 600 {
		t.Fatalf("after acking the oldest 400 of 1000: queue holds %d ids for %d live tasks, want 600 and 600", len(q.ids), q.live)
	}
	if ts := h.fetch("s1", e); len(ts) != api.MaxFetchLimit || ts[0].Key != "k0400" {
		t.Fatalf("fetch after acks = %d tasks from %s, want %d from k0400", len(ts), ts[0].Key, api.MaxFetchLimit)
	}

	// The oldest live task is held back (a failing delete, say) while
	// the next 200 are acked: they stay behind it, below the compaction
	// threshold, and fetch skips them.
	ts := h.fetch("s1", e)
	h.ackAll("s1", e, api.AckRemoved, ts[1:201])
	if q.live != 400 || len(q.ids) != 600 {
		t.Fatalf("after acking 200 behind a live task: %d ids for %d live, want 600 and 400", len(q.ids), q.live)
	}
	got := h.fetch("s1", e)
	if got[0].Key != "k0400" || got[1].Key != "k0601" {
		t.Fatalf("fetch = %s, %s, …, want k0400, k0601, …", got[0].Key, got[1].Key)
	}
	// Acking the held task cuts it and the 200 dead behind it.
	h.ackAll("s1", e, api.AckRemoved, got[:1])
	if q.live != 399 || len(q.ids) != 399 {
		t.Fatalf("after acking the held task: %d ids for %d live, want 399 and 399", len(q.ids), q.live)
	}
}

// TestTasksWalkedInIdOrderAcrossPages: the task index keeps 64 ids a page
// in a map; the task listing and the snapshot walk it in id order, with
// pages freed and holes left by acks (a restore refuses tasks out of
// order, and ListTasks's limit takes the oldest).
func TestTasksWalkedInIdOrderAcrossPages(t *testing.T) {
	h, e1 := newMountedEpoch(t, 5000)
	h.mustMount("c2", "s2", tombstoneCaps...)
	key := func(i int) string { return fmt.Sprintf("k/%05d", i) }
	for i := 0; i < 1200; i++ {
		h.put(key(i), "s1", "s2")
	}
	for i := 0; i < 800; i += 100 {
		var keys []string
		for j := i; j < i+100; j++ {
			keys = append(keys, key(j))
		}
		h.remove(keys...)
	}
	// Ack s1's first 200 tasks (whole pages freed, s2's left) and every
	// third of the rest fetched (holes), then remove more (new pages).
	var acked []api.LocalDeleteTask
	for i, tk := range h.fetch("s1", e1) {
		if i < 200 || i%3 == 0 {
			acked = append(acked, tk)
		}
	}
	h.ackAll("s1", e1, api.AckRemoved, acked)
	var keys []string
	for i := 800; i < 1200; i++ {
		keys = append(keys, key(i))
	}
	h.remove(keys...)

	all, total := h.f.ListTasks("", 5000)
	if total != len(all) || total != 2*1200-len(acked) {
		t.Fatalf("ListTasks lists %d of %d, want %d", len(all), total, 2*1200-len(acked))
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Fatalf("ListTasks: task %d after task %d", all[i].ID, all[i-1].ID)
		}
	}
	first, total := h.f.ListTasks("", 70)
	if total != len(all) || len(first) != 70 || first[69].ID != all[69].ID {
		t.Fatalf("ListTasks limit 70: %d tasks of %d, last %d (want %d)", len(first), total, first[len(first)-1].ID, all[69].ID)
	}
	restored(t, h.f) // refuses a snapshot whose tasks are out of id order
}
