package holder

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/grant"
	"sexton/internal/testutil"
	"sexton/transport"
)

// fakeMaster answers the holder's follow loop: mounts (recording each
// request, optionally held until released), heartbeats (optionally asking
// for one remount), empty fetches and reconciles.
type fakeMaster struct {
	key     []byte
	ln      net.Listener
	srv     *transport.Server
	mu      sync.Mutex
	mounts  []api.MountLocalDiskRequest
	hold    chan struct{} // closed: mounts are answered
	remount bool
	tasks   []api.LocalDeleteTask // handed out by the next fetch
	acked   []api.TaskResult
	// reported collects the refs of DropTombstonedReplicas calls, when
	// the fake knows the ghost check (withGhostCheck).
	reported []api.ObjectRef
}

func startFakeMaster(t *testing.T, key []byte, opts ...func(*fakeMaster)) *fakeMaster {
	t.Helper()
	m := &fakeMaster{key: key, hold: make(chan struct{})}
	m.srv = transport.NewServer(transport.ServerConfig{})
	for _, o := range opts {
		o(m)
	}
	transport.Register(m.srv, api.MethodMountLocalDisk, func(ctx context.Context, req *api.MountLocalDiskRequest) (*api.MountLocalDiskResponse, error) {
		select {
		case <-m.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.mounts = append(m.mounts, *req)
		return &api.MountLocalDiskResponse{MountEpoch: uint64(len(m.mounts)), MasterEpoch: 1, ClusterID: testCluster, GrantKey: m.key}, nil
	})
	transport.Register(m.srv, api.MethodHeartbeat, func(_ context.Context, _ *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		r := m.remount
		m.remount = false
		return &api.HeartbeatResponse{MasterEpoch: 1, Remount: r}, nil
	})
	transport.Register(m.srv, api.MethodFetchLocalDeleteTasks, func(ctx context.Context, req *api.FetchTasksRequest) (*api.FetchTasksResponse, error) {
		m.mu.Lock()
		tasks := m.tasks
		m.tasks = nil
		m.mu.Unlock()
		if len(tasks) > 0 {
			return &api.FetchTasksResponse{MasterEpoch: 1, Tasks: tasks}, nil
		}
		select {
		case <-time.After(time.Duration(req.WaitMillis) * time.Millisecond):
		case <-ctx.Done():
		}
		return &api.FetchTasksResponse{MasterEpoch: 1}, nil
	})
	transport.Register(m.srv, api.MethodAckLocalDeleteTasks, func(_ context.Context, req *api.AckTasksRequest) (*api.AckTasksResponse, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.acked = append(m.acked, req.Results...)
		return &api.AckTasksResponse{}, nil
	})
	m.ln = serveFakeMaster(t, m.srv)
	return m
}

// serveFakeMaster answers reconciliation with nothing to drop and serves
// srv on a loopback port until the test ends.
func serveFakeMaster(t *testing.T, srv *transport.Server) net.Listener {
	t.Helper()
	transport.Register(srv, api.MethodReconcileLocalDiskObjects, func(_ context.Context, _ *api.ReconcileRequest) (*api.ReconcileResponse, error) {
		return &api.ReconcileResponse{}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln
}

func (m *fakeMaster) ackedCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.acked)
}

func (m *fakeMaster) mountsSeen() []api.MountLocalDiskRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]api.MountLocalDiskRequest(nil), m.mounts...)
}

// mountedStore is a fake master that answers mounts at once and a store in
// a fresh directory, closed when the test ends.
func mountedStore(t *testing.T) (*fakeMaster, *Store) {
	t.Helper()
	m := startFakeMaster(t, grant.NewKey())
	close(m.hold)
	s := openT(t, t.TempDir(), StoreOptions{})
	t.Cleanup(func() { s.Close() })
	return m, s
}

func startTestService(t *testing.T, s *Store, m *fakeMaster, with ...func(*ServiceConfig)) *Service {
	t.Helper()
	cfg := ServiceConfig{Masters: []string{m.ln.Addr().String()}, ListenAddr: "127.0.0.1:0",
		HeartbeatInterval: 20 * time.Millisecond, FetchWait: 50 * time.Millisecond}
	for _, w := range with {
		w(&cfg)
	}
	svc, err := StartService(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// Invariant 11 at the data RPC: a write is stored only with a grant the
// leader signed for this segment, key and incarnation, unexpired, and
// only once the holder has the grant key from a mount. Every refusal is
// GRANT_REFUSED and stores nothing. A tombstoned incarnation is refused
// even with a valid grant.
func TestWriteNeedsValidGrant(t *testing.T) {
	key := grant.NewKey()
	m := startFakeMaster(t, key)
	s := openT(t, t.TempDir(), StoreOptions{})
	defer s.Close()
	svc := startTestService(t, s, m)
	defer svc.Close()

	conn, err := transport.Dial(context.Background(), svc.Addr(), transport.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	seg := s.SegmentID()
	exp := time.Now().Add(time.Minute).UnixNano()
	signed := func(k string, inc api.ObjectIncarnation) *api.WriteGrant {
		g := grant.Sign(key, api.WriteGrant{Segment: seg, Key: k, Incarnation: inc, Expires: exp, Size: int64(len("v-" + k))})
		return &g
	}
	write := func(k string, inc api.ObjectIncarnation, g *api.WriteGrant) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return conn.Call(ctx, api.MethodHolderWrite, &api.HolderWriteRequest{Key: k, Tenant: "t", Incarnation: inc, Value: []byte("v-" + k), Grant: g}, &api.Empty{})
	}
	refused := func(what string, err error) {
		t.Helper()
		if api.CodeOf(err) != api.CodeGrantRefused {
			t.Fatalf("%s: %v, want GRANT_REFUSED", what, err)
		}
	}

	// Not mounted yet: no grant key, so even a valid grant is refused.
	refused("before the first mount", write("k", incN(1), signed("k", incN(1))))
	close(m.hold)
	testutil.WaitFor(t, 10*time.Second, func() bool { mounted, _, _ := svc.mountState(); return mounted }, "mount")

	refused("no grant", write("k", incN(1), nil))
	forged := grant.Sign(grant.NewKey(), api.WriteGrant{Segment: seg, Key: "k", Incarnation: incN(1), Expires: exp, Size: 3})
	refused("grant under another key", write("k", incN(1), &forged))
	tampered := *signed("k", incN(1))
	tampered.Expires += int64(time.Hour)
	refused("grant with a changed expiry", write("k", incN(1), &tampered))
	expired := grant.Sign(key, api.WriteGrant{Segment: seg, Key: "k", Incarnation: incN(1), Expires: time.Now().Add(-time.Second).UnixNano(), Size: 3})
	refused("expired grant", write("k", incN(1), &expired))
	other := grant.Sign(key, api.WriteGrant{Segment: "another-segment", Key: "k", Incarnation: incN(1), Expires: exp, Size: 3})
	refused("grant for another segment", write("k", incN(1), &other))
	refused("grant for another key", write("k", incN(1), signed("j", incN(1))))
	refused("grant for another incarnation", write("k", incN(1), signed("k", incN(2))))
	longer := grant.Sign(key, api.WriteGrant{Segment: seg, Key: "k", Incarnation: incN(1), Expires: exp, Size: 4})
	refused("grant for a value of another length", write("k", incN(1), &longer))
	tooLong := grant.Sign(key, api.WriteGrant{Segment: seg, Key: "k", Incarnation: incN(1), Expires: time.Now().Add(MaxGrantLifetime + MaxClockSkew + time.Minute).UnixNano(), Size: 3})
	refused("grant living longer than any may", write("k", incN(1), &tooLong))
	if u := s.Usage(); u.LiveObjects != 0 || u.UsedBytes != 0 {
		t.Fatalf("refused writes stored something: %+v", u)
	}

	if err := write("k", incN(1), signed("k", incN(1))); err != nil {
		t.Fatalf("write with a valid grant: %v", err)
	}
	mustGet(t, s, "k", incN(1), []byte("v-k"))

	// Tombstoned here (the record absent: its write comes late): a valid
	// grant does not bring it back.
	wantOutcomes(t, s.BatchMarkDeleted([]api.LocalDeleteTask{task(s, 1, "late", incN(4))}), api.AckStaleVersion)
	refused("tombstoned incarnation", write("late", incN(4), signed("late", incN(4))))
	if _, err := s.Get("late", incN(4)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tombstoned incarnation stored: %v", err)
	}
}

// Every mount names the holder process: the same id for every remount of
// one Service, a new one for the next Service (a restart), so the master
// fences the process before it.
func TestMountNamesTheProcess(t *testing.T) {
	m, s := mountedStore(t)
	svc := startTestService(t, s, m)
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(m.mountsSeen()) == 1 }, "first mount")
	m.mu.Lock()
	m.remount = true
	m.mu.Unlock()
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(m.mountsSeen()) == 2 }, "remount")
	svc.Close()
	svc = startTestService(t, s, m)
	defer svc.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool { return len(m.mountsSeen()) == 3 }, "restart mount")
	ms := m.mountsSeen()
	if ms[0].Process == "" || ms[0].Process != ms[1].Process {
		t.Fatalf("one process mounted as %q then %q", ms[0].Process, ms[1].Process)
	}
	if ms[2].Process == ms[0].Process {
		t.Fatalf("a restarted service mounted with the old process id %q", ms[2].Process)
	}
}

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
