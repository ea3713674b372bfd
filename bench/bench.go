package bench

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/internal/cliflag"
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

// reset forgets what was added so far (a bench's setup phase).
func (l *latencies) reset() {
	l.mu.Lock()
	l.all = l.all[:0]
	l.mu.Unlock()
}

// count is how many were added.
func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
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
func (e *Env) runParallel(name string, n, c int, unitsPerOp int, op func(i int) error) (float64, error) {
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
	fmt.Fprintf(e.Out, "%s: %d ops x %d, %d clients, %.2fs: %.0f /s, p50 %s, p99 %s, errors %d\n",
		name, n, unitsPerOp, c, el.Seconds(), rate, lat.pct(0.50).Round(time.Microsecond), lat.pct(0.99).Round(time.Microsecond), errs.Load())
	if fe := firstErr.Load(); fe != nil {
		fmt.Fprintf(e.Err, "%s: first error: %v\n", name, fe)
	}
	return rate, nil
}

// RemoveOptions are bench remove's settings.
type RemoveOptions struct {
	Keys, Batch, Clients int
	// Drain acks the delete tasks while timing; otherwise they are acked
	// after, and that drain is timed too.
	Drain bool
	// Sessions sends the removes with a client session (exactly once).
	Sessions bool
	// MasterHTTP are the masters' HTTP addresses; empty: their figures
	// are not read.
	MasterHTTP []string
}

// Remove times removes of o.Keys metadata-only objects on a bench
// segment: sessions through the client library, bare ones through a
// second connection that also carries the segment's own traffic.
func Remove(e *Env, o RemoveOptions) error {
	keys, batch, clients, drain, sessions, masterHTTP := o.Keys, o.Batch, o.Clients, o.Drain, o.Sessions, o.MasterHTTP
	if batch < 1 || batch > api.MaxBatchKeys || clients < 1 || keys < 1 {
		return usagef("--keys, --clients ≥ 1 and 1 ≤ --batch ≤ %d", api.MaxBatchKeys)
	}
	probe, err := e.masterProbe(masterHTTP)
	if err != nil {
		return err
	}
	sc, cl, err := e.twoClients()
	if err != nil {
		return err
	}
	seg, err := mountSim(e, cl, simSegmentID(0), simConfig{pool: simPool, process: benchRunID()})
	if err != nil {
		return err
	}
	seg.draining.Store(drain)
	prefix := fmt.Sprintf("bench/%d/", time.Now().UnixNano())
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("%s%08d", prefix, i)
	}
	// Create metadata-only objects on the bench segment (not timed), in
	// batches so that a large --keys is quick to set up.
	const setupBatch = 256
	if _, err := e.runParallel("setup put (metadata only)", (keys+setupBatch-1)/setupBatch, 16, setupBatch, func(b int) error {
		ctx, c := e.ctx()
		defer c()
		items := make([]api.PutStartRequest, 0, setupBatch)
		for i := b * setupBatch; i < min((b+1)*setupBatch, keys); i++ {
			items = append(items, api.PutStartRequest{Key: names[i], Size: 64, ReplicaNum: 1, Pool: simPool})
		}
		_, itemErr, err := putBatch(ctx, cl, items)
		return cmp.Or(err, itemErr)
	}); err != nil {
		seg.stop(e)
		return err
	}
	ops := (keys + batch - 1) / batch
	var keyErrs atomic.Int64
	// Where the timed removes' commits go, from the masters' own
	// histograms read before and after them (--master-http).
	before := probe.readHistograms()
	nodesBefore := probe.readNodes(nil)
	start := time.Now()
	_, err = e.runParallel(fmt.Sprintf("remove (batch %d)", batch), ops, clients, batch, func(i int) error {
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
	elapsed := time.Since(start)
	nodesAfter := probe.readNodes(nil)
	fmt.Fprintf(e.Out, "per-key errors: %d\n", keyErrs.Load())
	probe.printCommitParts(before, probe.readHistograms(), elapsed)
	if line := cpuLine("masters", probe, nodesBefore, nodesAfter, int64(keys)); line != "" {
		fmt.Fprintln(e.Out, "CPU per removed key"+line)
	}
	// What a holder coming back to this backlog would see: the drain the
	// stop does (fetch a page, ack it, again) until no task is left.
	ackedBefore := seg.acked.Load()
	took, left := seg.stop(e)
	acked := seg.acked.Load() - ackedBefore
	fmt.Fprintf(e.Out, "drain: %d delete tasks acked in %s (%.0f /s), %d left\n", acked, took.Round(time.Millisecond), float64(acked)/took.Seconds(), left)
	return err
}

// PutGetOptions are bench get's settings; without Get it only puts.
type PutGetOptions struct {
	Get               bool
	N                 int
	Size              Size
	Clients, Replicas int
}

// Size is a size as given on the command line and in bytes.
type Size struct {
	Text  string
	Bytes int64
}

// ParseSize reads a size such as 4KiB (cliflag.ParseSize), keeping its
// text for the report.
func ParseSize(s string) (Size, error) {
	n, err := cliflag.ParseSize(s)
	return Size{Text: s, Bytes: n}, err
}

// putSetup is what a put bench starts with: the client, a random value
// of sz bytes and a key prefix of its own.
func (e *Env) putSetup(sz int64) (*client.Client, []byte, string, error) {
	cl, err := e.Client()
	if err != nil {
		return nil, nil, "", err
	}
	value := make([]byte, sz)
	_, _ = rand.Read(value)
	return cl, value, fmt.Sprintf("bench/%d/", time.Now().UnixNano()), nil
}

// PutGet times o.N puts of o.Size values and then, with o.Get, gets of
// them.
func PutGet(e *Env, o PutGetOptions) error {
	get, n, size, sz, clients, replicas := o.Get, o.N, o.Size.Text, o.Size.Bytes, o.Clients, o.Replicas
	cl, value, prefix, err := e.putSetup(sz)
	if err != nil {
		return err
	}
	put := func(i int) error {
		ctx, c := e.ctx()
		defer c()
		_, err := cl.Put(ctx, fmt.Sprintf("%s%08d", prefix, i), value, client.PutOptions{Replicas: replicas})
		return err
	}
	if _, err := e.runParallel(fmt.Sprintf("put %s", size), n, clients, 1, put); err != nil || !get {
		return err
	}
	_, err = e.runParallel(fmt.Sprintf("get %s", size), n, clients, 1, func(i int) error {
		ctx, c := e.ctx()
		defer c()
		_, _, err := cl.Get(ctx, fmt.Sprintf("%s%08d", prefix, i))
		return err
	})
	return err
}

// Converge measures deletion convergence on real holders: the time from
// Remove returning OK to the holder's ack being committed (the task gone
// from the leader), one key at a time on an otherwise idle cluster, for
// n objects.
func Converge(e *Env, n int) error {
	cl, err := e.Client()
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
	fmt.Fprintf(e.Out, "deletion convergence (Remove OK → ack committed), %d objects: p50 %s, p99 %s, max %s\n",
		n, lat.pct(0.5).Round(10*time.Microsecond), lat.pct(0.99).Round(10*time.Microsecond), lat.pct(1).Round(10*time.Microsecond))
	return nil
}
