package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
	"sexton/client"
)

// latencies collects per-operation latencies from many goroutines.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d)
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return 0
	}
	sort.Slice(l.all, func(i, j int) bool { return l.all[i] < l.all[j] })
	i := int(p*float64(len(l.all))+0.5) - 1
	return l.all[max(0, min(i, len(l.all)-1))]
}

// runParallel runs ops 0..n-1 on c goroutines and reports them.
func runParallel(name string, n, c int, unitsPerOp int, op func(i int) error) (float64, error) {
	var next atomic.Int64
	var errs atomic.Int64
	var firstErr atomic.Value
	lat := &latencies{}
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				if err := op(i); err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				lat.add(time.Since(t))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	rate := float64(n*unitsPerOp) / el.Seconds()
	fmt.Printf("%s: %d ops x %d, %d clients, %.2fs: %.0f /s, p50 %s, p99 %s, errors %d\n",
		name, n, unitsPerOp, c, el.Seconds(), rate, lat.pct(0.50).Round(time.Microsecond), lat.pct(0.99).Round(time.Microsecond), errs.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "%s: first error: %v\n", name, e)
	}
	return rate, nil
}

// benchSegment is a metadata-only segment the bench mounts itself, with a
// drainer that acks its delete tasks the way a holder would, so the
// registry does not fill.
type benchSegment struct {
	id       api.SegmentID
	epoch    uint64
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	acked    atomic.Int64
	draining atomic.Bool // the drainer acks only while set, so acks do not compete with the timed removes
}

func mountBenchSegment(e *env, cl *client.Client, pool string) (*benchSegment, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := &benchSegment{id: api.SegmentID("bench-" + hex.EncodeToString(b[:]))}
	var resp api.MountLocalDiskResponse
	if err := e.callVia(cl, api.MethodMountLocalDisk, &api.MountLocalDiskRequest{ClientID: string(s.id), Segment: s.id, Pool: pool,
		Capacity: 1 << 50, Capabilities: []api.Capability{api.CapObjectTombstoneV1}, Endpoint: "bench.invalid:0"}, &resp); err != nil {
		return nil, fmt.Errorf("mount bench segment: %w", err)
	}
	s.epoch = resp.MountEpoch
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go func() { // heartbeats keep the segment placeable
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for ctx.Err() == nil {
			hctx, c := context.WithTimeout(ctx, 3*time.Second)
			_ = cl.Call(hctx, api.MethodHeartbeat, &api.HeartbeatRequest{ClientID: string(s.id), Segment: s.id, MountEpoch: s.epoch, Capacity: 1 << 50}, nil)
			c()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	go func() { // the drainer: fetch, "tombstone", ack
		defer s.wg.Done()
		for ctx.Err() == nil {
			if !s.draining.Load() {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			fctx, c := context.WithTimeout(ctx, 5*time.Second)
			var fr api.FetchTasksResponse
			err := cl.Call(fctx, api.MethodFetchLocalDeleteTasks, &api.FetchTasksRequest{Segment: s.id, MountEpoch: s.epoch, Limit: api.MaxFetchLimit, WaitMillis: 1000}, &fr)
			c()
			if err != nil || len(fr.Tasks) == 0 {
				continue
			}
			res := make([]api.TaskResult, len(fr.Tasks))
			for i, t := range fr.Tasks {
				res[i] = api.TaskResult{TaskID: t.ID, Key: t.Key, Incarnation: t.Incarnation, Outcome: api.AckRemoved}
			}
			actx, c2 := context.WithTimeout(ctx, 5*time.Second)
			var ar api.AckTasksResponse
			if cl.Call(actx, api.MethodAckLocalDeleteTasks, &api.AckTasksRequest{Segment: s.id, MountEpoch: s.epoch, Results: res}, &ar) == nil {
				s.acked.Add(int64(ar.Dropped))
			}
			c2()
		}
	}()
	// Give the leader a heartbeat before placing on it.
	time.Sleep(50 * time.Millisecond)
	return s, nil
}

// stop acks every remaining task of the segment, then unmounts it, so a
// bench leaves the registry as it found it.
func (s *benchSegment) stop(e *env, cl *client.Client) {
	s.draining.Store(true)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		var lt api.ListTasksResponse
		if err := e.callVia(cl, api.MethodListTasks, &api.ListTasksRequest{Segment: s.id, Limit: 1}, &lt); err == nil && lt.Total == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.cancel()
	s.wg.Wait()
	_ = e.callVia(cl, api.MethodUnmountLocalDisk, &api.UnmountLocalDiskRequest{Segment: s.id, MountEpoch: s.epoch}, nil)
}

func setupBenchRemove(fs *flag.FlagSet) runFunc {
	keys := fs.Int("keys", 10000, "keys to create and remove")
	batch := fs.Int("batch", 1, "keys per BatchRemove (1 = Remove)")
	clients := fs.Int("clients", 1, "concurrent clients")
	drain := fs.Bool("drain", false, "ack the delete tasks while timing (as a holder would); otherwise they are acked after")
	sessions := fs.Bool("sessions", true, "send removes with a client session (exactly once); false sends them bare, to measure what a session costs")
	return func(e *env, _ []string) error {
		return benchRemove(e, *keys, *batch, *clients, *drain, *sessions)
	}
}

// benchRemove times removes of keys metadata-only objects on a bench
// segment: sessions through the client library, bare ones through a
// second connection that also carries the segment's own traffic.
func benchRemove(e *env, keys, batch, clients int, drain, sessions bool) error {
	if batch < 1 || batch > api.MaxBatchKeys || clients < 1 || keys < 1 {
		return usagef("--keys, --clients ≥ 1 and 1 ≤ --batch ≤ %d", api.MaxBatchKeys)
	}
	sc, err := e.client()
	if err != nil {
		return err
	}
	cl, err := e.newClient()
	if err != nil {
		return err
	}
	pool := "bench-" + fmt.Sprint(time.Now().UnixNano())
	seg, err := mountBenchSegment(e, cl, pool)
	if err != nil {
		return err
	}
	seg.draining.Store(drain)
	defer seg.stop(e, cl)
	prefix := fmt.Sprintf("bench/%d/", time.Now().UnixNano())
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("%s%08d", prefix, i)
	}
	// Create metadata-only objects on the bench segment (not timed).
	if _, err := runParallel("setup put (metadata only)", keys, 16, 1, func(i int) error {
		ctx, c := e.ctx()
		defer c()
		var st api.PutStartResponse
		if err := cl.Call(ctx, api.MethodPutStart, &api.PutStartRequest{Key: names[i], Size: 64, ReplicaNum: 1, Pool: pool}, &st); err != nil {
			return err
		}
		return cl.Call(ctx, api.MethodPutEnd, &api.PutEndRequest{Key: names[i], Incarnation: st.Incarnation}, nil)
	}); err != nil {
		return err
	}
	ops := (keys + batch - 1) / batch
	var keyErrs atomic.Int64
	_, err = runParallel(fmt.Sprintf("remove (batch %d)", batch), ops, clients, batch, func(i int) error {
		ctx, c := e.ctx()
		defer c()
		lo, hi := i*batch, min((i+1)*batch, keys)
		if batch == 1 && sessions {
			return sc.Remove(ctx, names[lo])
		}
		if batch == 1 {
			return cl.Call(ctx, api.MethodRemove, &api.KeyRequest{Key: names[lo]}, nil)
		}
		var results []api.KeyResult
		if sessions {
			if results, err = sc.BatchRemove(ctx, names[lo:hi], nil); err != nil {
				return err
			}
		} else {
			var resp api.BatchRemoveResponse
			if err := cl.Call(ctx, api.MethodBatchRemove, &api.KeysRequest{Keys: names[lo:hi]}, &resp); err != nil {
				return err
			}
			results = resp.Results
		}
		for _, r := range results {
			if r.Err != nil {
				keyErrs.Add(1)
			}
		}
		return nil
	})
	fmt.Printf("per-key errors: %d\n", keyErrs.Load())
	return err
}

func setupBenchPutGet(get bool) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		n := fs.Int("n", 2000, "objects")
		size := fs.String("size", "4KiB", "value size")
		clients := fs.Int("clients", 16, "concurrent clients")
		replicas := fs.Int("replicas", 1, "replicas per object")
		return func(e *env, _ []string) error { return benchPutGet(e, get, *n, *size, *clients, *replicas) }
	}
}

func benchPutGet(e *env, get bool, n int, size string, clients, replicas int) error {
	sz, err := parseSize(size)
	if err != nil {
		return err
	}
	cl, err := e.client()
	if err != nil {
		return err
	}
	value := make([]byte, sz)
	_, _ = rand.Read(value)
	prefix := fmt.Sprintf("bench/%d/", time.Now().UnixNano())
	put := func(i int) error {
		ctx, c := e.ctx()
		defer c()
		_, err := cl.Put(ctx, fmt.Sprintf("%s%08d", prefix, i), value, client.PutOptions{Replicas: replicas})
		return err
	}
	if _, err := runParallel(fmt.Sprintf("put %s", size), n, clients, 1, put); err != nil || !get {
		return err
	}
	_, err = runParallel(fmt.Sprintf("get %s", size), n, clients, 1, func(i int) error {
		ctx, c := e.ctx()
		defer c()
		_, _, err := cl.Get(ctx, fmt.Sprintf("%s%08d", prefix, i))
		return err
	})
	return err
}

// benchConverge measures deletion convergence on real holders: the time
// from Remove returning OK to the holder's ack being committed (the task
// gone from the leader), one key at a time on an otherwise idle cluster.
func setupBenchConverge(fs *flag.FlagSet) runFunc {
	n := fs.Int("n", 200, "objects to put and remove")
	return func(e *env, _ []string) error { return benchConverge(e, *n) }
}

func benchConverge(e *env, n int) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	value := make([]byte, 4096)
	lat := &latencies{}
	prefix := fmt.Sprintf("converge/%d/", time.Now().UnixNano())
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s%06d", prefix, i)
		ctx, cancel := e.ctx()
		inc, err := cl.Put(ctx, key, value, client.PutOptions{Replicas: 1})
		if err != nil {
			cancel()
			return fmt.Errorf("put %s: %w", key, err)
		}
		var st api.StatResponse
		_ = cl.Call(ctx, api.MethodStat, &api.KeyRequest{Key: key}, &st)
		if err := cl.Remove(ctx, key); err != nil {
			cancel()
			return fmt.Errorf("remove %s: %w", key, err)
		}
		removed := time.Now()
		seg := st.Object.Replicas[0].Segment
		for {
			var lt api.ListTasksResponse
			if err := cl.Call(ctx, api.MethodListTasks, &api.ListTasksRequest{Segment: seg, Limit: 1000}, &lt); err != nil {
				cancel()
				return err
			}
			pending := false
			for _, t := range lt.Tasks {
				if t.Key == key && t.Incarnation == inc {
					pending = true
				}
			}
			if !pending {
				lat.add(time.Since(removed))
				break
			}
			if time.Since(removed) > 30*time.Second {
				cancel()
				return fmt.Errorf("%s: task still pending after 30s", key)
			}
			time.Sleep(500 * time.Microsecond)
		}
		cancel()
	}
	fmt.Printf("deletion convergence (Remove OK → ack committed), %d objects: p50 %s, p99 %s, max %s\n",
		n, lat.pct(0.5).Round(10*time.Microsecond), lat.pct(0.99).Round(10*time.Microsecond), lat.pct(1).Round(10*time.Microsecond))
	return nil
}
