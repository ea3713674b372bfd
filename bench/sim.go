package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"sexton/internal/ctxsleep"

	"sexton/api"
	"sexton/client"
)

// simHolder is a holder this process simulates for the benches: it mounts
// a segment, heartbeats it every second and, while draining, follows the
// protocol of holder.Service's follow loop — long-poll
// FetchLocalDeleteTasks, "tombstone" at once, AckLocalDeleteTasks — with
// no disk behind it. The benches' puts write no bytes, so the masters see
// what real holders send and the bench measures the masters, not disks.
type simHolder struct {
	id     api.SegmentID
	epoch  uint64
	cl     *client.Client
	cfg    simConfig
	cancel context.CancelFunc
	wg     sync.WaitGroup

	acked    atomic.Int64 // tasks the leader dropped on this holder's acks
	hbFailed atomic.Int64 // heartbeats that got no answer
	draining atomic.Bool  // the drainer acks only while set, so acks need not compete with a timed phase
	fenced   atomic.Bool  // a heartbeat answered Remount: another process mounted the segment
}

// simConfig is what the simulated holders of one bench share.
type simConfig struct {
	pool    string
	process string // this run's id: a mount by another run is a new owner and fences this one
	// heartbeats collects the round trips of answered heartbeats; nil keeps none.
	heartbeats *latencies
	// onAck is called once an ack is committed (AckLocalDeleteTasks
	// answered OK, which the leader does after applying the entry), with
	// the results it carried; nil: nothing.
	onAck func(acked []api.TaskResult, at time.Time)
}

// simPool is the pool the simulated holders mount in: the benches place
// with Pool set to it, so their objects never land on real holders.
const simPool = "sexton-bench"

// simFetchWait is the drainer's long-poll wait, a real holder's default.
const simFetchWait = 10 * time.Second

// simSegmentID names simulated holder i. The names are the same in every
// run, so repeated runs remount the same segment records rather than add
// new ones (the registry keeps every segment ever mounted, and placement
// scans them all); the price is that two benches run at once against one
// cluster fence each other (the later mount wins, the earlier one reports
// it was fenced).
func simSegmentID(i int) api.SegmentID { return api.SegmentID(fmt.Sprintf("bench-sim-%05d", i)) }

// benchRunID is a run's id: unique enough to tell runs apart in key
// prefixes and mounts, short enough for keys.
func benchRunID() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// mountSim mounts segment id through cl and starts its heartbeat and its
// drainer (not draining until told).
func mountSim(e *Env, cl *client.Client, id api.SegmentID, cfg simConfig) (*simHolder, error) {
	s := &simHolder{id: id, cl: cl, cfg: cfg}
	var resp api.MountLocalDiskResponse
	if err := retryIdempotent(func() (err error) {
		ctx, cancel := e.ctx()
		defer cancel()
		resp, err = cl.HolderLink().Mount(ctx, &api.MountLocalDiskRequest{ClientID: string(id), Segment: id, Pool: cfg.pool,
			Capacity: 1 << 50, Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: "bench.invalid:0", Process: cfg.process})
		return err
	}); err != nil {
		return nil, fmt.Errorf("mount simulated holder %s: %w", id, err)
	}
	// The mount counts as a first heartbeat on the leader: the segment is
	// placeable at once.
	s.epoch = resp.MountEpoch
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go s.heartbeatLoop(ctx)
	go s.drainLoop(ctx)
	return s, nil
}

// heartbeatLoop heartbeats every second, from a random phase so that many
// holders started together do not beat in step.
func (s *simHolder) heartbeatLoop(ctx context.Context) {
	defer s.wg.Done()
	if !ctxsleep.Sleep(ctx, rand.N(time.Second)) {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for ctx.Err() == nil {
		hctx, c := context.WithTimeout(ctx, 3*time.Second)
		start := time.Now()
		hr, err := s.cl.HolderLink().Heartbeat(hctx, &api.HeartbeatRequest{ClientID: string(s.id), Segment: s.id, MountEpoch: s.epoch, Capacity: 1 << 50})
		c()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.hbFailed.Add(1)
			}
		case hr.Remount:
			s.fenced.Store(true)
		case s.cfg.heartbeats != nil:
			s.cfg.heartbeats.add(time.Since(start))
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// drainLoop: fetch, "tombstone", ack.
func (s *simHolder) drainLoop(ctx context.Context) {
	defer s.wg.Done()
	for ctx.Err() == nil {
		if !s.draining.Load() {
			ctxsleep.Sleep(ctx, 20*time.Millisecond)
			continue
		}
		fctx, c := context.WithTimeout(ctx, simFetchWait+5*time.Second)
		fr, err := s.cl.HolderLink().Fetch(fctx, &api.FetchTasksRequest{Segment: s.id, MountEpoch: s.epoch,
			Limit: api.MaxFetchLimit, WaitMillis: simFetchWait.Milliseconds()})
		c()
		if err != nil {
			ctxsleep.Sleep(ctx, 200*time.Millisecond) // as a holder does: no spinning on a failing leader
			continue
		}
		if len(fr.Tasks) == 0 {
			continue
		}
		res := make([]api.TaskResult, len(fr.Tasks))
		for i, t := range fr.Tasks {
			res[i] = api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation, Outcome: api.AckRemoved}
		}
		actx, c2 := context.WithTimeout(ctx, 15*time.Second)
		ar, err := s.cl.HolderLink().Ack(actx, &api.AckTasksRequest{Segment: s.id, MountEpoch: s.epoch, Results: res})
		c2()
		if err != nil {
			continue // the tasks stay pending and come back on a later fetch
		}
		s.acked.Add(int64(ar.Dropped))
		if s.cfg.onAck != nil {
			s.cfg.onAck(res, time.Now())
		}
	}
}

// pendingTasks is how many delete tasks the leader holds for the segment.
func (s *simHolder) pendingTasks(e *Env) (int, error) {
	var lt api.ListTasksResponse
	if err := e.callVia(s.cl, api.MethodListTasks, &api.ListTasksRequest{Segment: s.id, Limit: 1}, &lt); err != nil {
		return 0, err
	}
	return lt.Total, nil
}

// stop acks every remaining task of the segment (for up to a minute),
// then unmounts it, so a bench leaves no task pending and no segment
// mounted: the segment record stays, unmounted (the registry has no way
// to forget one), for the next run to mount again. It returns how long
// the drain took and how many tasks it left pending (-1: unknown).
func (s *simHolder) stop(e *Env) (drain time.Duration, left int) {
	s.draining.Store(true)
	start, left := time.Now(), -1
	for deadline := start.Add(60 * time.Second); time.Now().Before(deadline); {
		n, err := s.pendingTasks(e)
		if err == nil {
			left = n
		}
		if left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	drain = time.Since(start)
	s.cancel()
	s.wg.Wait()
	err := retryIdempotent(func() error {
		ctx, cancel := e.ctx()
		defer cancel()
		err := s.cl.HolderLink().Unmount(ctx, &api.UnmountLocalDiskRequest{Segment: s.id, MountEpoch: s.epoch})
		if api.CodeOf(err) == api.CodeStaleMountEpoch {
			return nil // an earlier attempt did it (or another mount took the segment)
		}
		return err
	})
	if err != nil {
		fmt.Fprintf(e.Err, "sexton: unmounting simulated holder %s: %v (it stays mounted; the next bench run takes it over)\n", s.id, err)
	}
	return drain, left
}

// retryIdempotent calls f again, a few times, while it fails without an
// answer from a leader (OUTCOME_UNKNOWN from an election mid-commit,
// UNAVAILABLE, TIMEOUT): for the calls a holder repeats freely. A mount
// repeated by the same process is answered with the mount it made, and a
// repeated unmount finds the segment unmounted. The client has already
// followed the leader for --timeout on UNAVAILABLE; OUTCOME_UNKNOWN it
// returns at once for a call without a session.
func retryIdempotent(f func() error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = f(); err == nil {
			return nil
		}
		switch api.CodeOf(err) {
		case api.CodeOutcomeUnknown, api.CodeUnavailable, api.CodeTimeout:
			time.Sleep(200 * time.Millisecond)
		default:
			return err
		}
	}
	return err
}

// mountSims mounts n simulated holders, holder i through clients[i %
// len(clients)], a few at a time. On an error it unmounts those it
// mounted.
func mountSims(e *Env, clients []*client.Client, n int, cfg simConfig) ([]*simHolder, error) {
	sims := make([]*simHolder, n)
	err := forEachParallel(n, 32, func(i int) error {
		s, err := mountSim(e, clients[i%len(clients)], simSegmentID(i), cfg)
		sims[i] = s
		return err
	})
	if err != nil {
		stopSims(e, sims)
		return nil, err
	}
	return sims, nil
}

// stopSims stops every holder of sims (nil entries skipped), a few at a time.
func stopSims(e *Env, sims []*simHolder) {
	_ = forEachParallel(len(sims), 32, func(i int) error {
		if sims[i] != nil {
			sims[i].stop(e)
		}
		return nil
	})
}

// forEachParallel runs f(0..n-1) on up to workers goroutines and returns
// the first error; after one, no further f starts.
func forEachParallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return first
}
