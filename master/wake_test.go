package master

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsm"
	"sexton/internal/testutil"
)

// scanCounter counts, per segment, how often a fetch read the fsm: once
// when a poll starts and once per wake-up.
type scanCounter struct {
	mu sync.Mutex
	n  map[api.SegmentID]int
}

func (s *scanCounter) hook(c *Config) {
	c.hooks.fetchScan = func(seg api.SegmentID) {
		s.mu.Lock()
		s.n[seg]++
		s.mu.Unlock()
	}
}

func (s *scanCounter) of(seg api.SegmentID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[seg]
}

// pollResult is what a long poll answered and how long it took.
type pollResult struct {
	resp *api.FetchTasksResponse
	err  error
	at   time.Time
}

// parkPoll starts a long poll of h's segment in the background and waits
// until it has read the fsm once (it is parked, unless it found tasks).
func parkPoll(t *testing.T, h *fakeHolder, scans *scanCounter, wait time.Duration) <-chan pollResult {
	t.Helper()
	before := scans.of(h.Seg)
	out := make(chan pollResult, 1)
	go func() {
		resp, err := h.fetchResp(0, wait)
		out <- pollResult{resp, err, time.Now()}
	}()
	testutil.WaitFor(t, harnessTimeout, func() bool { return scans.of(h.Seg) > before }, "the poll reads the fsm")
	return out
}

// pinned puts key with one replica in pool (one holder per pool here, so
// on that holder's segment).
func (tc *testCluster) pinned(t *testing.T, key, pool string) *api.PutStartResponse {
	t.Helper()
	ps, err := tc.putStart(&api.PutStartRequest{Key: key, Size: 10, ReplicaNum: 1, Pool: pool})
	if err != nil {
		t.Fatalf("PutStart %q in %s: %v", key, pool, err)
	}
	if err := tc.call(api.MethodPutEnd, &api.PutEndRequest{Key: key, Incarnation: ps.Incarnation}, &api.Empty{}); err != nil {
		t.Fatalf("PutEnd %q: %v", key, err)
	}
	return ps
}

// A holder's long poll sleeps through entries that do not concern its
// segment — puts, removes and acks whose replicas are all on another
// segment — and wakes at once when a task for it is created.
func TestLongPollWakesOnlyForItsSegment(t *testing.T) {
	scans := &scanCounter{n: map[api.SegmentID]int{}}
	tc := startCluster(t, 1, shortLeases, scans.hook)
	a := tc.mountHolder(t, "seg-a", "pa")
	b := tc.mountHolder(t, "seg-b", "pb")
	tc.waitLeaseFloor(t)

	const pollWait = 10 * time.Second
	polled := parkPoll(t, b, scans, pollWait)
	parked := scans.of(b.Seg)

	// Some 60 entries, every one concerning seg-a only.
	for i := 0; i < 10; i++ {
		keys := []string{fmt.Sprintf("a%d-0", i), fmt.Sprintf("a%d-1", i)}
		for _, k := range keys {
			tc.pinned(t, k, "pa")
		}
		tc.removeMany(t, keys)
		tasks := a.fetch(t, 0, time.Second)
		if len(tasks) != len(keys) {
			t.Fatalf("round %d: seg-a fetched %v, want the tasks of %v", i, tasks, keys)
		}
		a.ack(t, tasks, ackAll(api.AckRemoved))
	}
	select {
	case r := <-polled:
		t.Fatalf("seg-b's poll returned (%+v, %v) while only seg-a had work", r.resp, r.err)
	default:
	}
	if n := scans.of(b.Seg); n != parked {
		t.Fatalf("seg-b's poll read the fsm %d more times for entries concerning seg-a only", n-parked)
	}

	tc.pinned(t, "b", "pb")
	removed := time.Now()
	if err := tc.remove("b"); err != nil {
		t.Fatal(err)
	}
	r := <-polled
	if r.err != nil || len(r.resp.Tasks) != 1 || r.resp.Tasks[0].Key != "b" {
		t.Fatalf("seg-b's poll answered %+v, %v; want the task of b", r.resp, r.err)
	}
	// At its timeout the poll would have answered nothing: getting the
	// task proves the wake-up; the latency is reported, not asserted.
	t.Logf("seg-b's poll answered %v after the Remove was acknowledged; it read the fsm %d times in all", r.at.Sub(removed), scans.of(b.Seg)-parked+1)
}

// A task withheld behind an older incarnation's task on another segment
// (invariant 7) is released by that task's ack, and the ack wakes the
// poll of the released task's segment.
func TestAckOnOneSegmentWakesThePollOfTheTaskItReleases(t *testing.T) {
	scans := &scanCounter{n: map[api.SegmentID]int{}}
	tc := startCluster(t, 1, shortLeases, scans.hook)
	a := tc.mountHolder(t, "seg-a", "pa")
	b := tc.mountHolder(t, "seg-b", "pb")
	old := tc.pinned(t, "k", "pa")
	newer := tc.pinned(t, "k", "pb") // the overwrite queues the delete of k@old on seg-a
	if err := tc.remove("k"); err != nil {
		t.Fatal(err)
	}
	tc.waitLeaseFloor(t)

	const pollWait = 10 * time.Second
	polled := parkPoll(t, b, scans, pollWait)
	select {
	case r := <-polled:
		t.Fatalf("seg-b's poll answered %+v, %v while k@new is withheld behind k@old", r.resp, r.err)
	case <-time.After(100 * time.Millisecond):
	}

	tasks := a.fetch(t, 0, time.Second)
	if len(tasks) != 1 || tasks[0].Incarnation != old.Incarnation {
		t.Fatalf("seg-a fetched %v, want the delete of k@old", tasks)
	}
	acked := time.Now()
	a.ack(t, tasks, ackAll(api.AckRemoved))
	r := <-polled
	if r.err != nil || len(r.resp.Tasks) != 1 || r.resp.Tasks[0].Incarnation != newer.Incarnation {
		t.Fatalf("seg-b's poll answered %+v, %v; want the released delete of k@new", r.resp, r.err)
	}
	t.Logf("seg-b's poll answered %v after the ack on seg-a was sent", r.at.Sub(acked))
}

// The wake-up slots close only for the segments an entry names (or for
// everyone), and a slot lives only while a poll watches it, so fetches
// naming made-up segments leave nothing behind.
func TestWakeupSlotsAreWokenPerSegmentAndForgotten(t *testing.T) {
	w := newWakeups()
	a1, a2, b := w.watch("a"), w.watch("a"), w.watch("b")
	dfs := w.dfsChanged()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	w.wake(fsm.Wake{Segments: []api.SegmentID{"c"}})
	if closed(a1.ch) || closed(b.ch) || closed(dfs) {
		t.Fatal("an entry concerning c woke a, b or the DFS waiters")
	}
	w.wake(fsm.Wake{Segments: []api.SegmentID{"a"}})
	if !closed(a1.ch) || !closed(a2.ch) || closed(b.ch) || closed(dfs) {
		t.Fatal("an entry concerning a must wake both polls of a and nobody else")
	}
	w.wake(fsm.Wake{DFS: true})
	if !closed(dfs) || closed(b.ch) {
		t.Fatal("a DFS entry must wake the DFS waiters only")
	}
	w.unwatch("a", a1)
	w.unwatch("a", a2)
	a3 := w.watch("a")
	if closed(a3.ch) {
		t.Fatal("a new watch of a got the closed channel")
	}
	w.wake(fsm.Wake{All: true})
	if !closed(a3.ch) || !closed(b.ch) {
		t.Fatal("an entry concerning all must wake every poll")
	}
	for i := 0; i < 100; i++ {
		seg := api.SegmentID(fmt.Sprintf("made-up-%d", i))
		w.unwatch(seg, w.watch(seg))
	}
	w.unwatch("a", a3)
	w.unwatch("b", b)
	if len(w.segs) != 0 {
		t.Fatalf("%d slots left with no poll watching", len(w.segs))
	}
}
