package master

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// TestRemoveBatcherKeepsOneEntryInFlight: while one Remove entry is being
// committed, the requests that arrive wait, and all of them go out together
// in the next entry, never as a second entry beside the first (which would
// make each entry carry half the keys and wait on the other: batcher.go).
// Every caller still gets exactly its own results.
func TestRemoveBatcherKeepsOneEntryInFlight(t *testing.T) {
	type proposal struct {
		cmd     *fsm.Remove
		release chan struct{}
	}
	proposals := make(chan proposal)
	testEnded := make(chan struct{}) // frees a committer a failed test left waiting
	propose := func(c fsm.Command, _ func(any)) (any, error) {
		cmd := c.(*fsm.Remove)
		p := proposal{cmd: cmd, release: make(chan struct{})}
		select {
		case proposals <- p:
		case <-testEnded:
			return nil, api.Errorf(api.CodeUnavailable, "test ended")
		}
		select {
		case <-p.release:
		case <-testEnded:
		}
		return removeAnswer(cmd), nil
	}
	b := newRemoveBatcher(propose, newMetrics(nil), 0)
	defer b.close()
	defer close(testEnded)

	type answer struct {
		key string
		res []api.KeyResult
		err error
	}
	answers := make(chan answer, 16)
	submit := func(key string) {
		res, err := b.remove([]string{key}, nil, api.Session{})
		answers <- answer{key, res, err}
	}
	go submit("first")
	first := <-proposals
	const queued = 8
	for i := 0; i < queued; i++ {
		go submit(fmt.Sprintf("k%d", i))
	}
	// Every request queued; give a second committer, if there were one,
	// time to propose what it took.
	for deadline := time.Now().Add(5 * time.Second); len(b.reqs) < queued && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	select {
	case p := <-proposals:
		t.Fatalf("an entry of %d keys %v was proposed while the first was in flight", len(p.cmd.Keys), p.cmd.Keys)
	case <-time.After(100 * time.Millisecond):
	}
	close(first.release)
	second := <-proposals
	if len(second.cmd.Keys) != queued || len(second.cmd.Spans) != queued {
		t.Fatalf("the next entry carries %d keys in %d spans, want all %d queued requests", len(second.cmd.Keys), len(second.cmd.Spans), queued)
	}
	close(second.release)
	for i := 0; i < queued+1; i++ {
		a := <-answers
		if a.err != nil || len(a.res) != 1 || a.res[0].Key != a.key {
			t.Fatalf("request %q answered %+v, %v", a.key, a.res, a.err)
		}
	}
}

// TestRemoveBatcherWaitsForTheCallersItAnswered: callers that send their
// next request as soon as they have their answer (closed-loop clients) go
// out together, one entry per round, instead of falling into alternate
// entries of about half of them each: what queued during a commit, and
// then the callers that commit answered (batcher.go, loop).
func TestRemoveBatcherWaitsForTheCallersItAnswered(t *testing.T) {
	const clients, rounds = 8, 20
	var mu sync.Mutex
	var spans []int
	propose := func(c fsm.Command, _ func(any)) (any, error) {
		cmd := c.(*fsm.Remove)
		mu.Lock()
		spans = append(spans, len(cmd.Spans))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a commit
		return removeAnswer(cmd), nil
	}
	b := newRemoveBatcher(propose, newMetrics(nil), 0)
	defer b.close()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				key := fmt.Sprintf("c%d-%d", c, i)
				res, err := b.remove([]string{key}, nil, api.Session{})
				if err != nil || len(res) != 1 || res[0].Key != key {
					errs <- fmt.Errorf("request %q answered %+v, %v", key, res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// One entry per round plus the start, where the first request goes out
	// alone; alternate entries of about half the clients would make ~40.
	// The slack is for a caller that comes back later than the wait (a
	// loaded test machine), which costs one short entry.
	if len(spans) > rounds+rounds/2 {
		t.Fatalf("%d callers x %d rounds took %d entries, want about %d: requests per entry %v", clients, rounds, len(spans), rounds+1, spans)
	}
}

// TestRemoveBatcherWaitIsBounded: an entry waits for the callers the last
// one answered for at most maxLinger, however long commits take, and it
// goes out when they do not come back.
func TestRemoveBatcherWaitIsBounded(t *testing.T) {
	proposals := make(chan *fsm.Remove, 4)
	release := make(chan struct{})
	propose := func(c fsm.Command, _ func(any)) (any, error) {
		cmd := c.(*fsm.Remove)
		proposals <- cmd
		<-release
		return removeAnswer(cmd), nil
	}
	b := newRemoveBatcher(propose, newMetrics(nil), 0)
	defer b.close()
	defer close(release)
	answered := make(chan string, 2)
	submit := func(key string) {
		if _, err := b.remove([]string{key}, nil, api.Session{}); err == nil {
			answered <- key
		}
	}
	go submit("once") // a caller that does not come back
	<-proposals
	go submit("queued")
	for deadline := time.Now().Add(5 * time.Second); len(b.reqs) < 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	// A commit of a second: half of it would be a 500 ms wait.
	time.Sleep(time.Second)
	release <- struct{}{}
	released := time.Now()
	if k := <-answered; k != "once" {
		t.Fatalf("answered %q first", k)
	}
	select {
	case cmd := <-proposals:
		if waited := time.Since(released); waited > maxLinger+200*time.Millisecond {
			t.Fatalf("the entry %v went out %v after the last commit, want at most maxLinger (%v)", cmd.Keys, waited, maxLinger)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queued request was never proposed: the batcher waits for a caller that does not come back")
	}
	release <- struct{}{}
	if k := <-answered; k != "queued" {
		t.Fatalf("answered %q, want queued", k)
	}
}

// removeAnswer is a stand-in fsm's answer to cmd: every key removed.
func removeAnswer(cmd *fsm.Remove) *fsm.RemoveResult {
	res := make([]api.KeyResult, len(cmd.Keys))
	for i, k := range cmd.Keys {
		res[i] = api.KeyResult{Key: k}
	}
	return &fsm.RemoveResult{Results: res}
}
