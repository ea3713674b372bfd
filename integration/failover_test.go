package integration

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/transport"
)

// ledger records what clients were told. Only acknowledged outcomes are
// asserted afterwards; a call that failed may or may not have happened.
type ledger struct {
	mu        sync.Mutex
	puts      map[string]api.ObjectIncarnation // acknowledged puts
	removed   map[string]api.ObjectIncarnation // acknowledged removes
	uncertain map[string]bool                  // a remove whose outcome is unknown
	acks      []time.Time                      // times of acknowledged writes
}

func newLedger() *ledger {
	return &ledger{puts: map[string]api.ObjectIncarnation{}, removed: map[string]api.ObjectIncarnation{}, uncertain: map[string]bool{}}
}

func (l *ledger) ack(f func()) {
	l.mu.Lock()
	f()
	l.acks = append(l.acks, time.Now())
	l.mu.Unlock()
}

// firstAckAfter is the first acknowledged write after t.
func (l *ledger) firstAckAfter(t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.acks), func(i int) bool { return l.acks[i].After(t) })
	if i == len(l.acks) {
		return time.Time{}, false
	}
	return l.acks[i], true
}

// drillWorker puts unique keys and removes about half of them, alone or in
// batches of four, until stop closes.
func drillWorker(w int, cl *transport.ClusterClient, pool string, l *ledger, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	var batch []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("drill/%d/%06d", w, i)
		ctx, cancel := ctxT(10 * time.Second)
		inc, err := putMeta(ctx, cl, key, pool)
		cancel()
		if err != nil {
			continue
		}
		l.ack(func() { l.puts[key] = inc })
		switch i % 4 {
		case 0:
			ctx, cancel := ctxT(10 * time.Second)
			err := cl.Call(ctx, api.MethodRemove, &api.KeyRequest{Key: key}, nil)
			cancel()
			l.mu.Lock()
			if err == nil {
				l.removed[key] = inc
				l.acks = append(l.acks, time.Now())
			} else {
				l.uncertain[key] = true
			}
			l.mu.Unlock()
		case 1, 2:
			batch = append(batch, key)
			if len(batch) == 4 {
				ctx, cancel := ctxT(10 * time.Second)
				var resp api.BatchRemoveResponse
				err := cl.Call(ctx, api.MethodBatchRemove, &api.KeysRequest{Keys: batch}, &resp)
				cancel()
				l.mu.Lock()
				for j, k := range batch {
					if err == nil && resp.Results[j].Err == nil {
						l.removed[k] = l.puts[k]
					} else {
						l.uncertain[k] = true
					}
				}
				if err == nil {
					l.acks = append(l.acks, time.Now())
				}
				l.mu.Unlock()
				batch = nil
			}
		}
	}
}

// The failover drill: while clients put and remove, SIGKILL the leader,
// several times, restarting it each time. Afterwards every acknowledged
// Remove is still removed, every acknowledged and not-removed put is
// readable, and every delete task of an acknowledged remove is still
// pending on the new leader (invariants 1 and 3).
func TestFailoverDrill(t *testing.T) {
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("SEXTON_DRILL_ROUNDS")); err == nil && v > 0 {
		rounds = v // `make soak` runs more drills for the failover numbers
	}
	c := startCluster(t, 3)
	h := mountFake(t, c.client(0), "drill", "p1")
	l := newLedger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go drillWorker(w, c.client(w), "p1", l, stop, &wg)
	}
	var gaps []time.Duration
	for r := 0; r < rounds; r++ {
		time.Sleep(1500 * time.Millisecond)
		victim := c.leader()
		killed := time.Now()
		victim.kill()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if at, ok := l.firstAckAfter(killed); ok {
				gaps = append(gaps, at.Sub(killed))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no write acknowledged within 20s of killing %s", r, victim.id)
			}
			time.Sleep(5 * time.Millisecond)
		}
		victim.start()
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	h.close()
	sorted := append([]time.Duration(nil), gaps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("kill-to-first-acknowledged-write over %d drills: median %v, worst %v, all %v",
		len(gaps), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), gaps)

	cl := c.client(1)
	c.waitLeader(30 * time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.removed) == 0 || len(l.puts) == 0 {
		t.Fatalf("drill did too little to prove anything: %d puts, %d removes", len(l.puts), len(l.removed))
	}
	tasks := map[string]api.ObjectIncarnation{}
	for _, task := range allTasks(t, cl) {
		if task.Segment == h.seg {
			tasks[task.Key] = task.Incarnation
		}
	}
	for key, inc := range l.removed {
		ctx, cancel := ctxT(10 * time.Second)
		err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &api.GetResponse{})
		cancel()
		if api.CodeOf(err) != api.CodeObjectNotFound {
			t.Errorf("acknowledged remove of %s undone: Get = %v", key, err)
		}
		if got, ok := tasks[key]; !ok || got != inc {
			t.Errorf("delete task of acknowledged remove %s (%s) lost: have %v %v", key, inc, got, ok)
		}
	}
	for key, inc := range l.puts {
		if _, gone := l.removed[key]; gone || l.uncertain[key] {
			continue
		}
		var g api.GetResponse
		ctx, cancel := ctxT(10 * time.Second)
		err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: key}, &g)
		cancel()
		if err != nil || g.Object.Incarnation != inc {
			t.Errorf("acknowledged put of %s (%s) not readable: %v %+v", key, inc, err, g.Object)
		}
	}
	t.Logf("checked %d acknowledged puts and %d acknowledged removes; %d tasks pending", len(l.puts), len(l.removed), len(tasks))
}
