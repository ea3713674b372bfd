//go:build testhooks

package holder

import (
	"errors"
	"sexton/api"
	"sync"
	"testing"
)

// Fault 5b: a write planned before the tombstone and committed after it
// must end dead. The put is held right after the committer planned it;
// the tombstone of the same incarnation resolves (absent) and reaches its
// floor step while the put is still held; then the put commits. The
// tombstone must not answer a terminal outcome that leaves the record
// live: it waits for the commit and tombstones the record (Removed).
func TestTombstoneRacingQueuedWriteWins(t *testing.T) {
	s, dir := openTemp(t)
	planned, release := make(chan struct{}), make(chan struct{})
	atFloor := make(chan struct{})
	var once, floorOnce sync.Once
	s.hook = func(step string) {
		switch step {
		case hookPutPlanned:
			once.Do(func() {
				close(planned)
				<-release
			})
		case hookTombstoneFloorWait:
			floorOnce.Do(func() { close(atFloor) })
		}
	}
	putErr := make(chan error, 1)
	go func() { putErr <- s.Put("k", "t", incN(9), []byte("racing bytes")) }()
	<-planned
	res := make(chan []api.TaskResult, 1)
	go func() { res <- s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "k", incN(9))}) }()
	select {
	case <-atFloor: // resolved absent, about to record the floor
	case r := <-res:
		t.Fatalf("tombstone answered %v while the write was queued, without waiting for it", outcomes(r))
	}
	close(release)
	err := <-putErr
	rs := <-res
	s.hook = nil
	switch o := rs[0].Outcome; {
	case o == api.AckRemoved && err == nil:
	case o == api.AckStaleVersion && errors.Is(err, ErrTombstoned):
	default:
		t.Fatalf("tombstone %v, put %v", o, err)
	}
	if _, err := s.Get("k", incN(9)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the racing write is live after its tombstone was answered: %v", err)
	}
	s.Close()
	s = openT(t, dir, StoreOptions{})
	defer s.Close()
	if _, err := s.Get("k", incN(9)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the racing write is live after a restart: %v", err)
	}
	wantRefused(t, s, "k", incN(9))
}
