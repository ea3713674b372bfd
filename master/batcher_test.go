package master

import (
	"fmt"
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
	propose := func(c fsm.Command) (any, error) {
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
		res := make([]api.KeyResult, len(cmd.Keys))
		for i, k := range cmd.Keys {
			res[i] = api.KeyResult{Key: k}
		}
		return &fsm.RemoveResult{Results: res}, nil
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
