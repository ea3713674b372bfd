package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
	"sexton/client"
)

// LoadOptions are bench load's settings.
type LoadOptions struct {
	Objects, Clients, Batch, Segments int
	// Prefix is the keys' prefix; empty: load/RUNID/.
	Prefix     string
	Size       int64
	MasterHTTP []string
}

// Load fills the cluster with c.Objects objects through batched put
// entries onto simulated holders (no bytes are written: what is measured
// is the masters), and prints the commit rate overall and by tenth of the
// run, and the masters' memory afterwards. It keeps no keys: key i is
// made from i when its batch is sent.
//
// The objects stay (filling the cluster is the point) on the simulated
// holders' segments, which are unmounted at the end: a Get of them finds
// no holder. `sexton rm --prefix` removes them; their delete tasks are
// acked the next time a bench mounts the simulated holders.
func Load(e *Env, c LoadOptions) error {
	if c.Objects < 1 || c.Clients < 1 || c.Segments < 1 || c.Batch < 1 || c.Batch > api.MaxBatchPutItems {
		return usagef("--objects, --clients, --segments ≥ 1 and 1 ≤ --batch ≤ %d", api.MaxBatchPutItems)
	}
	run := benchRunID()
	if c.Prefix == "" {
		c.Prefix = "load/" + run + "/"
	}
	if err := api.ValidKey(fmt.Sprintf("%s%010d", c.Prefix, c.Objects-1)); err != nil {
		return usagef("--prefix: %v", err)
	}
	cl, probe, err := e.clientAndProbe(c.MasterHTTP)
	if err != nil {
		return err
	}
	before, err := cl.Status(context.Background())
	if err != nil {
		return fmt.Errorf("status before: %w", err)
	}
	memBefore := probe.memory()
	simCl, err := e.NewClient() // the holders' traffic on its own connection
	if err != nil {
		return err
	}
	sims, err := mountSims(e, []*client.Client{simCl}, c.Segments, simConfig{pool: simPool, process: run})
	if err != nil {
		return err
	}
	defer stopSims(e, sims)
	for _, s := range sims {
		s.draining.Store(true) // nothing to drain unless a put is replaced; acked as a holder would
	}

	fmt.Fprintf(e.Out, "bench load: %d objects under %s on %d simulated holders, batches of %d, %d clients\n", c.Objects, c.Prefix, c.Segments, c.Batch, c.Clients)
	batches := (c.Objects + c.Batch - 1) / c.Batch
	clock := &sliceClock{total: int64(c.Objects), start: time.Now()}
	var next, sent, committed, retried atomic.Int64
	var mu sync.Mutex
	var itemErr, callErr error
	var failed int64
	var wg sync.WaitGroup
	var stop atomic.Bool
	for range min(c.Clients, batches) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]api.PutStartRequest, 0, c.Batch)
			for !stop.Load() {
				b := int(next.Add(1) - 1)
				if b >= batches {
					return
				}
				lo, hi := b*c.Batch, min((b+1)*c.Batch, c.Objects)
				items = items[:0]
				for i := lo; i < hi; i++ {
					items = append(items, api.PutStartRequest{Key: fmt.Sprintf("%s%010d", c.Prefix, i), Size: c.Size, ReplicaNum: 1, Pool: simPool, IfAbsent: true})
				}
				n, ie, err := loadBatch(e, cl, items, &retried)
				clock.note(committed.Add(int64(n)))
				sent.Add(int64(hi - lo))
				if ie == nil && err == nil {
					continue
				}
				mu.Lock()
				failed += int64(hi - lo - n)
				itemErr, callErr = keepFirst(itemErr, ie), keepFirst(callErr, err)
				mu.Unlock()
				if err != nil {
					stop.Store(true) // sent loadAttempts times, or refused outright: the cluster is not answering
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	p := e.progress("bench load", int64(c.Objects), "objects")
	for reported, waiting := int64(0), true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(200 * time.Millisecond):
		}
		n := sent.Load()
		p.Add(n - reported)
		reported = n
	}
	elapsed := time.Since(clock.start)
	if callErr != nil {
		p.Abort()
	} else {
		p.Finish()
	}

	ok := committed.Load()
	fmt.Fprintf(e.Out, "committed %d objects in %.2fs: %.0f objects/s; %d failed", ok, elapsed.Seconds(), float64(ok)/elapsed.Seconds(), failed)
	if n := retried.Load(); n > 0 {
		fmt.Fprintf(e.Out, "; %d batches sent again after the cluster did not answer for --timeout", n)
	}
	fmt.Fprintln(e.Out)
	fmt.Fprintf(e.Out, "objects/s by tenth of the objects (does the commit rate fall as the state grows?):\n")
	for k, r := range clock.rates() {
		if r == 0 { // reached by the same batch as the tenth before
			fmt.Fprintf(e.Out, "  %3d-%3d%%  %8s\n", 10*k, 10*(k+1), "-")
			continue
		}
		fmt.Fprintf(e.Out, "  %3d-%3d%%  %8.0f\n", 10*k, 10*(k+1), r)
	}
	after, err := cl.Status(context.Background())
	if err != nil {
		return fmt.Errorf("status after: %w", err)
	}
	fmt.Fprintf(e.Out, "cluster objects (leader's count): %d before, %d after (%+d)\n", before.Objects, after.Objects, after.Objects-before.Objects)
	printElections(e.Out, before, after)
	probe.printMemory(memBefore, after.Objects, ok)

	switch {
	case callErr != nil:
		return fmt.Errorf("load stopped after %d objects committed (a longer --timeout rides out longer elections): %w", ok, callErr)
	case itemErr != nil:
		if errors.Is(itemErr, api.ErrObjectAlreadyExists) {
			return fmt.Errorf("%d objects not created (the prefix was used before? give a new --prefix): first: %w", failed, itemErr)
		}
		return fmt.Errorf("%d objects not created: first: %w", failed, itemErr)
	}
	return nil
}

// loadAttempts bounds how often bench load sends one batch: again after a
// call that got no answer for the client's whole --timeout.
const loadAttempts = 10

// loadBatch puts items with putBatch and returns how many were committed.
// When a call fails without an answer (OUTCOME_UNKNOWN, UNAVAILABLE or
// TIMEOUT once the client's retries ran out) it waits a second and sends
// the batch again (counted in retried), up to loadAttempts times. An
// earlier attempt may have acted: on a repeat, an item not committed by
// this attempt counts as committed if its key exists now (the prefix is
// the run's own) and as failed otherwise (an earlier attempt left a
// pending put, which refuses a new one until the leader discards it).
func loadBatch(e *Env, cl *client.Client, items []api.PutStartRequest, retried *atomic.Int64) (committed int, itemErr, err error) {
	for attempt := 1; ; attempt++ {
		ctx, cancel := e.ctx()
		ok, ie, err := putBatch(ctx, cl, items)
		cancel()
		switch {
		case err == nil && attempt == 1:
			return len(ok), ie, nil
		case err == nil:
			return settleRepeat(e, cl, items, ok, ie)
		case attempt == loadAttempts:
			return 0, nil, err
		}
		switch api.CodeOf(err) {
		case api.CodeOutcomeUnknown, api.CodeUnavailable, api.CodeTimeout:
		default:
			return 0, nil, err
		}
		retried.Add(1)
		time.Sleep(time.Second)
	}
}

// settleRepeat counts a repeated batch's items: those committed now, and
// those not whose key exists (an earlier attempt committed them).
func settleRepeat(e *Env, cl *client.Client, items []api.PutStartRequest, ok []int, itemErr error) (int, error, error) {
	done := make([]bool, len(items))
	for _, i := range ok {
		done[i] = true
	}
	var keys []string
	for i, it := range items {
		if !done[i] {
			keys = append(keys, it.Key)
		}
	}
	if len(keys) == 0 {
		return len(items), nil, nil
	}
	var ex api.ExistResponse
	if err := e.callVia(cl, api.MethodExist, &api.KeysRequest{Keys: keys}, &ex); err != nil {
		return len(ok), itemErr, fmt.Errorf("after sending a batch again, Exist: %w", err)
	}
	if len(ex.Exists) != len(keys) {
		return len(ok), itemErr, fmt.Errorf("the Exist call answered %d for %d keys", len(ex.Exists), len(keys))
	}
	n := len(ok)
	for _, exists := range ex.Exists {
		if exists {
			n++
		}
	}
	if n == len(items) {
		itemErr = nil
	} else {
		itemErr = fmt.Errorf("%d objects of a batch sent again were not created (an earlier attempt left them pending; the leader discards them): %w", len(items)-n, itemErr)
	}
	return n, itemErr, nil
}

// sliceClock notes when a growing count first reaches each tenth of its
// total, so the rate can be shown per tenth: whether it falls as the
// masters' state grows.
type sliceClock struct {
	total int64
	start time.Time

	mu sync.Mutex
	at []time.Duration // at[k]: when the count reached bound(k)
}

func (s *sliceClock) bound(k int) int64 { return s.total * int64(k+1) / 10 }

// note records count, a value of the count after an increment.
func (s *sliceClock) note(count int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.at) < 10 && count >= s.bound(len(s.at)) {
		s.at = append(s.at, time.Since(s.start))
	}
}

// rates are the counts per second of the tenths reached.
func (s *sliceClock) rates() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]float64, len(s.at))
	var prevT time.Duration
	var prevN int64
	for k, t := range s.at {
		if dt := (t - prevT).Seconds(); dt > 0 {
			out[k] = float64(s.bound(k)-prevN) / dt
		}
		prevT, prevN = t, s.bound(k)
	}
	return out
}
