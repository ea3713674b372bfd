package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sexton/api"
	"sexton/client"
)

// HoldersOptions are bench holders' settings.
type HoldersOptions struct {
	// N simulated holders put and remove for Duration, at Rate removes a
	// second, under Prefix (empty: holders/RUNID/).
	N          int
	Duration   time.Duration
	Rate       float64
	Prefix     string
	MasterHTTP []string
}

// removesInFlight bounds the Removes the bench has outstanding at once.
const removesInFlight = 64

// Holders runs c.N simulated holders against the cluster, each with
// its own client (its own connection to the leader, as real holders
// have), heartbeating every second and draining its delete tasks (long
// poll, "tombstone" at once, ack). Meanwhile it puts objects onto them
// (metadata only, one BatchPutStart and BatchPutEnd per 20 ms tick) and
// removes each with its own Remove at c.Rate a second. It prints the
// leader's CPU over the run, the heartbeat round trip, and deletion
// convergence: from the Remove's answer (OK) reaching the bench to the
// answer of the holder's AckLocalDeleteTasks carrying the key's task,
// which the leader gives once the ack's entry is committed and applied.
// An ack can be answered before the Remove's answer arrives (the leader
// wakes the holder's long poll on apply); such a key counts 0.
//
// At the end it waits (up to a minute) for every removed key's task to be
// acked, checks that no task is left on the simulated holders, and
// unmounts them: the cluster keeps their segment records, unmounted, for
// the next run to mount again.
func Holders(e *Env, c HoldersOptions) error {
	if c.N < 1 || c.Duration <= 0 || c.Rate <= 0 {
		return usagef("--n ≥ 1, --duration > 0 and --removes-per-sec > 0")
	}
	run := benchRunID()
	if c.Prefix == "" {
		c.Prefix = "holders/" + run + "/"
	}
	if err := api.ValidKey(c.Prefix + "0000000000"); err != nil {
		return usagef("--prefix: %v", err)
	}
	if err := ensureOpenFiles(c.N, len(e.Masters)); err != nil {
		return err
	}
	cl, probe, err := e.clientAndProbe(c.MasterHTTP)
	if err != nil {
		return err
	}
	clients := make([]*client.Client, c.N)
	for i := range clients {
		if clients[i], err = e.NewClient(); err != nil {
			return err
		}
	}
	hb := &latencies{}
	conv := newConvergence(c.Prefix)
	fmt.Fprintf(e.Out, "bench holders: %d simulated holders (one connection each), %s at %.0f removes/s under %s\n", c.N, c.Duration, c.Rate, c.Prefix)
	t0 := time.Now()
	sims, err := mountSims(e, clients, c.N, simConfig{pool: simPool, process: run, heartbeats: hb, onAck: conv.ackCommitted})
	if err != nil {
		return err
	}
	defer stopSims(e, sims)
	for _, s := range sims {
		s.draining.Store(true)
	}
	fmt.Fprintf(e.Out, "mounted %d holders in %.1fs\n", c.N, time.Since(t0).Seconds())

	before, err := cl.Status(context.Background())
	if err != nil {
		return fmt.Errorf("status before: %w", err)
	}
	cpu := startCPUWindow(probe)
	hb.reset()
	r := removeAtRate(e, cl, c, conv)
	cpuLine := cpu.end()
	hbLine := fmt.Sprintf("heartbeat round trip: p50 %s, p99 %s (%d answered during the removals)",
		hb.pct(0.5).Round(10*time.Microsecond), hb.pct(0.99).Round(10*time.Microsecond), hb.count())
	if r.callErr != nil {
		return r.callErr
	}
	// Every Remove answered OK must see its task acked.
	deadline := time.Now().Add(time.Minute)
	for lastLook := time.Now(); conv.open() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if time.Since(lastLook) > 2*time.Second {
			conv.settleUnseen(e, cl)
			lastLook = time.Now()
		}
	}
	pending := 0
	var pmu sync.Mutex
	perr := forEachParallel(len(sims), 32, func(i int) error {
		n, err := sims[i].pendingTasks(e)
		pmu.Lock()
		pending += n
		pmu.Unlock()
		return err
	})
	var acked, hbFailed, fenced int64
	for _, s := range sims {
		acked += s.acked.Load()
		hbFailed += s.hbFailed.Load()
		if s.fenced.Load() {
			fenced++
		}
	}

	fmt.Fprintf(e.Out, "removes: %d answered OK (%.1f/s over %.1fs), %d failed; objects put: %d, %d failed\n",
		r.removed, float64(r.removed)/r.elapsed.Seconds(), r.elapsed.Seconds(), r.removeFailed, r.put, r.putFailed)
	fmt.Fprintf(e.Out, "%s; %d unanswered in all\n", hbLine, hbFailed)
	lat := conv.lat
	fmt.Fprintf(e.Out, "deletion convergence (Remove answered OK → the holder's ack committed): p50 %s, p99 %s, max %s (%d of %d removes",
		lat.pct(0.5).Round(10*time.Microsecond), lat.pct(0.99).Round(10*time.Microsecond), lat.pct(1).Round(10*time.Microsecond), lat.count(), r.removed)
	if n := conv.unseen.Load(); n > 0 {
		fmt.Fprintf(e.Out, "; %d more acked without the holder seeing the answer, not timed", n)
	}
	fmt.Fprintln(e.Out, ")")
	fmt.Fprintf(e.Out, "tasks acked: %d; tasks pending on the simulated holders: %d\n", acked, pending)
	fmt.Fprintln(e.Out, cpuLine)
	if after, err := cl.Status(context.Background()); err == nil {
		printElections(e.Out, before, after)
	}

	var problems []string
	if r.removeFailed > 0 || r.putFailed > 0 {
		problems = append(problems, fmt.Sprintf("%d removes and %d puts failed (first: %v)", r.removeFailed, r.putFailed, r.firstErr))
	}
	if n := conv.open(); n > 0 {
		problems = append(problems, fmt.Sprintf("%d removed keys' tasks not acked after a minute", n))
	}
	if perr != nil {
		problems = append(problems, fmt.Sprintf("counting pending tasks: %v", perr))
	} else if pending > 0 {
		problems = append(problems, fmt.Sprintf("%d tasks pending on the simulated holders", pending))
	}
	if fenced > 0 {
		problems = append(problems, fmt.Sprintf("%d holders fenced: another process mounted their segments (a second bench at once?)", fenced))
	}
	if len(problems) > 0 {
		return fmt.Errorf("bench holders: %s", strings.Join(problems, "; "))
	}
	return nil
}

// removeRun is what removeAtRate did.
type removeRun struct {
	put, putFailed, removed, removeFailed int64
	elapsed                               time.Duration
	firstErr                              error // of a failed put or remove
	callErr                               error // a put call failed: the cluster did not answer for --timeout
}

// removeAtRate puts and removes objects on the simulated holders for
// c.Duration: every 20 ms it puts the keys the rate owes by then (up to a
// batch's worth; the rest next tick) and removes each put one with its
// own Remove, at most removesInFlight at once. It returns once every
// Remove has been answered.
func removeAtRate(e *Env, cl *client.Client, c HoldersOptions, conv *convergence) removeRun {
	var r removeRun
	var mu sync.Mutex
	failed := func(n int64, err error, remove bool) {
		mu.Lock()
		defer mu.Unlock()
		if remove {
			r.removeFailed += n
		} else {
			r.putFailed += n
		}
		r.firstErr = keepFirst(r.firstErr, err)
	}
	var removed atomic.Int64
	sem := make(chan struct{}, removesInFlight)
	var wg sync.WaitGroup
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	issued := 0
	for time.Since(start) < c.Duration {
		<-tick.C
		due := min(int(c.Rate*time.Since(start).Seconds())-issued, api.MaxBatchPutItems)
		if due <= 0 {
			continue
		}
		items := make([]api.PutStartRequest, due)
		for j := range items {
			items[j] = api.PutStartRequest{Key: fmt.Sprintf("%s%010d", c.Prefix, issued+j), Size: 4096, ReplicaNum: 1, Pool: simPool}
		}
		issued += due
		ctx, cancel := e.ctx()
		ok, itemErr, err := putBatch(ctx, cl, items)
		cancel()
		r.put += int64(len(ok))
		if err != nil {
			r.callErr = fmt.Errorf("putting objects to remove: %w", err)
			break
		}
		if n := due - len(ok); n > 0 {
			failed(int64(n), itemErr, false)
		}
		for _, i := range ok {
			key := items[i].Key
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				ctx, cancel := e.ctx()
				defer cancel()
				if err := cl.Remove(ctx, key); err != nil {
					failed(1, fmt.Errorf("remove %s: %w", key, err), true)
					return
				}
				conv.removeOK(key, time.Now())
				removed.Add(1)
			}()
		}
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.removed = removed.Load()
	return r
}

// convergence pairs each Remove answered OK with the committed ack of the
// key's delete task (one replica: one task) and keeps the time between.
// The ack can arrive first (see Holders); whichever comes second
// closes the pair. Keys outside the run's prefix (tasks left on the
// simulated holders' segments by an earlier bench) are not paired.
type convergence struct {
	prefix string
	lat    *latencies
	unseen atomic.Int64 // settled by settleUnseen

	mu      sync.Mutex
	removed map[string]time.Time // Remove answered, ack not seen yet
	acked   map[string]time.Time // ack seen, Remove's answer not yet
}

func newConvergence(prefix string) *convergence {
	return &convergence{prefix: prefix, lat: &latencies{}, removed: map[string]time.Time{}, acked: map[string]time.Time{}}
}

func (c *convergence) removeOK(key string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.acked[key]; ok {
		delete(c.acked, key)
		c.lat.add(max(a.Sub(at), 0))
		return
	}
	c.removed[key] = at
}

func (c *convergence) ackCommitted(acked []api.TaskResult, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range acked {
		if !strings.HasPrefix(t.Key, c.prefix) {
			continue
		}
		if r, ok := c.removed[t.Key]; ok {
			delete(c.removed, t.Key)
			c.lat.add(at.Sub(r))
			continue
		}
		c.acked[t.Key] = at
	}
}

// settleUnseen asks the leader about the keys whose ack has not been
// seen: an ack whose answer was lost (OUTCOME_UNKNOWN in an election) may
// have been committed all the same. A key with no task left is settled,
// counted in unseen and not timed.
func (c *convergence) settleUnseen(e *Env, cl *client.Client) {
	c.mu.Lock()
	keys := make([]string, 0, len(c.removed))
	for k := range c.removed {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	for _, k := range keys {
		var lt api.ListTasksResponse
		if err := e.callVia(cl, api.MethodListTasks, &api.ListTasksRequest{Key: k, Limit: 1}, &lt); err != nil || lt.Total > 0 {
			continue
		}
		c.mu.Lock()
		if _, ok := c.removed[k]; ok {
			delete(c.removed, k)
			c.unseen.Add(1)
		}
		c.mu.Unlock()
	}
}

// open is how many Removes answered OK have not had their task's ack seen.
func (c *convergence) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.removed)
}

// cpuWindow measures the leader's CPU between start and end from its
// process_cpu_seconds_total.
type cpuWindow struct {
	probe  *masterProbe
	leader string
	cpu0   float64
	t0     time.Time
	why    string // set when there is nothing to measure
}

func startCPUWindow(p *masterProbe) *cpuWindow {
	w := &cpuWindow{probe: p}
	if len(p.addrs) == 0 {
		w.why = "not read (give --master-http, the masters' --http-addr list)"
		return w
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := p.leader(ctx)
	if err != nil {
		w.why = err.Error()
		return w
	}
	m, err := p.scrape(ctx, leader, metricCPUSecs)
	if err != nil {
		w.why = err.Error()
		return w
	}
	cpu, ok := m[metricCPUSecs]
	if !ok {
		w.why = fmt.Sprintf("%s has no %s", leader, metricCPUSecs)
		return w
	}
	w.leader, w.cpu0, w.t0 = leader, cpu, time.Now()
	return w
}

// end returns the line to print: the leader's CPU over the window as a
// percentage of one core.
func (w *cpuWindow) end() string {
	if w.why != "" {
		return "leader CPU: " + w.why
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := w.probe.scrape(ctx, w.leader, metricCPUSecs)
	if err != nil {
		return "leader CPU: " + err.Error()
	}
	wall := time.Since(w.t0)
	line := fmt.Sprintf("leader CPU: %.1f%% of one core (%s, %s over %.1fs)", 100*(m[metricCPUSecs]-w.cpu0)/wall.Seconds(), w.leader, metricCPUSecs, wall.Seconds())
	if now, err := w.probe.leader(ctx); err != nil || now != w.leader {
		line += "; the leader changed during the run: the figure mixes roles"
	}
	return line
}

// ensureOpenFiles makes sure this process may hold the connections of
// holders simulated holders: one to the leader each, and one more to
// each of the masters the first call tries before the leader. It raises
// the soft RLIMIT_NOFILE towards the hard limit if it must.
func ensureOpenFiles(holders, masters int) error {
	const spare = 256 // the bench's own client, stdio, DNS, HTTP
	want := uint64(holders*max(masters, 1) + spare)
	need := uint64(holders + spare)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	if lim.Cur >= want {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("%d simulated holders need about %d open files (a connection each); RLIMIT_NOFILE allows at most %d: raise the hard limit or use a smaller --n", holders, need, lim.Max)
	}
	lim.Cur = min(want, lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising RLIMIT_NOFILE to %d for %d simulated holders: %w", lim.Cur, holders, err)
	}
	return nil
}
