package holder

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/testutil"
	"sexton/transport"
)

// withGhostCheck makes the fake master know the ghost check: it lists
// listed, two refs a page, and records what the holder reports.
func withGhostCheck(listed []api.ObjectRef) func(*fakeMaster) {
	return func(m *fakeMaster) {
		transport.Register(m.srv, api.MethodListLocalDiskReplicas, func(_ context.Context, req *api.ListReplicasRequest) (*api.ListReplicasResponse, error) {
			var page []api.ObjectRef
			for _, r := range listed {
				if r.Key > req.After && len(page) < 2 {
					page = append(page, r)
				}
			}
			out := &api.ListReplicasResponse{Refs: page}
			if len(page) > 0 && page[len(page)-1] != listed[len(listed)-1] {
				out.More, out.Next = true, page[len(page)-1].Key
			}
			return out, nil
		})
		transport.Register(m.srv, api.MethodDropTombstonedReplicas, func(_ context.Context, req *api.DropTombstonedRequest) (*api.DropTombstonedResponse, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.reported = append(m.reported, req.Refs...)
			return &api.DropTombstonedResponse{Dropped: req.Refs}, nil
		})
	}
}

// After a mount the holder pages through the replicas the master lists
// for it and reports exactly those it holds dead: tombstoned, or absent
// at or below the key's floor; not the live one, not the absent one.
func TestGhostCheckReportsOnlyTombstonedReplicas(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	mustPut(t, s, "a-live", incN(1), []byte("live"))
	mustPut(t, s, "b-dead", incN(2), []byte("dead"))
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "b-dead", incN(2)), task(s, 2, "d-floor", incN(5))}),
		api.AckRemoved, api.AckStaleVersion)
	listed := []api.ObjectRef{{Key: "a-live", Incarnation: incN(1)}, {Key: "b-dead", Incarnation: incN(2)},
		{Key: "c-absent", Incarnation: incN(3)}, {Key: "d-floor", Incarnation: incN(4)}, {Key: "e-live", Incarnation: incN(6)}}
	m := startFakeMaster(t, grant.NewKey(), withGhostCheck(listed))
	close(m.hold)
	svc := startTestService(t, s, m)
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.reported) >= 2
	}, "the ghost check's reports")
	testutil.WaitFor(t, 10*time.Second, func() bool { return svc.ghostsDropped.Load() == 2 }, "the dropped count")
	m.mu.Lock()
	got := append([]api.ObjectRef(nil), m.reported...)
	m.mu.Unlock()
	if len(got) != 2 || got[0] != listed[1] || got[1] != listed[3] {
		t.Fatalf("reported %+v, want b-dead and d-floor", got)
	}
}

// A master without the ghost check (the fake answers "unknown method"):
// nothing is reported, and the follow loop goes on to fetch and ack.
func TestGhostCheckAgainstAnOldMasterGoesOn(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	mustPut(t, s, "k", incN(1), []byte("v"))
	m := startFakeMaster(t, grant.NewKey())
	m.tasks = []api.LocalDeleteTask{task(s, 7, "k", incN(1))}
	close(m.hold)
	svc := startTestService(t, s, m)
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return m.ackedCount() == 1 }, "the task acked")
	if n := svc.ghostsDropped.Load(); n != 0 {
		t.Fatalf("%d ghosts dropped against an old master", n)
	}
}

// A ghost check that keeps failing (the master answers INTERNAL) is
// retried between fetches and never stops the follow loop's deletes.
func TestGhostCheckThatKeepsFailingDoesNotStopDeletes(t *testing.T) {
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	mustPut(t, s, "k", incN(1), []byte("v"))
	var asked atomic.Int64
	m := startFakeMaster(t, grant.NewKey(), func(m *fakeMaster) {
		transport.Register(m.srv, api.MethodListLocalDiskReplicas, func(_ context.Context, _ *api.ListReplicasRequest) (*api.ListReplicasResponse, error) {
			asked.Add(1)
			return nil, api.Errorf(api.CodeInternal, "cannot list")
		})
	})
	m.tasks = []api.LocalDeleteTask{task(s, 7, "k", incN(1))}
	close(m.hold)
	svc := startTestService(t, s, m)
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return m.ackedCount() == 1 }, "the task acked")
	testutil.WaitFor(t, 10*time.Second, func() bool { return asked.Load() >= 2 }, "the check retried")
}
