package integration

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
	"sexton/transport"
)

// TestPrefixDeleteJobAcrossLeaderKill: `sexton rm --prefix` over many more
// keys than the delete registry holds (capacity 5,000) finishes with no
// Remove failing closed for lack of room, survives a SIGKILL of the leader
// midway, and leaves the keys put (or overwritten) after it started and
// the keys outside the prefix. A client removing other keys meanwhile
// never finds the registry full: the job leaves it a reserve.
//
// SEXTON_PREFIX_KEYS sets the number of keys (default 100,000: about 25
// s on a 2-core VM). The log lines "before the kill: ..." and "prefix
// delete: N keys in D (R keys/s)" are the measurement.
func TestPrefixDeleteJobAcrossLeaderKill(t *testing.T) {
	nKeys := 100000
	if v, err := strconv.Atoi(os.Getenv("SEXTON_PREFIX_KEYS")); err == nil && v > 0 {
		nKeys = v
	}
	c := startCluster(t, 3)
	cl := c.client(0)
	h := mountFake(t, cl, "bulk", "p1")
	masters := strings.Join(c.addrs(), ",")
	runCLI(t, "operator", "settings", "set", "--registry-capacity", "5000", "--masters", masters)

	// Fill: batched metadata-only puts, four writers.
	fillStart := time.Now()
	key := func(i int) string { return fmt.Sprintf("bulk/%07d", i) }
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := w * api.MaxBatchPutItems; from < nKeys; from += 4 * api.MaxBatchPutItems {
				var keys []string
				for i := from; i < min(from+api.MaxBatchPutItems, nKeys); i++ {
					keys = append(keys, key(i))
				}
				if err := putBatchMeta(cl, keys, "p1"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("fill: %v", err)
	}
	var outside []string
	for i := range 300 {
		outside = append(outside, fmt.Sprintf("other/%04d", i))
	}
	if err := putBatchMeta(cl, outside[:256], "p1"); err != nil {
		t.Fatal(err)
	}
	if err := putBatchMeta(cl, outside[256:], "p1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled %d keys in %v", nKeys, time.Since(fillStart).Round(time.Millisecond))

	// The holder acks every task it is handed, as a real one would after
	// its tombstones are durable.
	stopAcks := make(chan struct{})
	var acked atomic.Int64
	waitAcks := testutil.RunWorkers(1, stopAcks, func(int) (func(int) bool, func()) {
		return func(int) bool {
			acked.Add(int64(ackBatch(cl, h)))
			return true
		}, nil
	})
	defer func() { close(stopAcks); waitAcks() }()

	start := time.Now()
	out := runCLI(t, "rm", "--prefix", "bulk/", "--masters", masters)
	m := regexp.MustCompile(`job (\d+):`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("rm --prefix printed %q, no job id", out)
	}
	id, _ := strconv.ParseUint(m[1], 10, 64)
	// After the start: a new key under the prefix and an overwrite.
	after := []string{"bulk/put-after-start", key(nKeys / 2), key(nKeys - 1)}
	if err := putBatchMeta(cl, after, "p1"); err != nil {
		t.Fatal(err)
	}

	// Meanwhile a client removes other keys one by one: none may fail.
	var clientRemoveErr error
	var removerWG sync.WaitGroup
	removerWG.Add(1)
	go func() {
		defer removerWG.Done()
		for _, k := range outside[:200] {
			ctx, cancel := ctxT(20 * time.Second)
			err := cl.Call(ctx, api.MethodRemove, &api.KeyRequest{Key: k}, nil)
			cancel()
			if api.CodeOf(err) == api.CodeLocalDeleteRegistryFull {
				clientRemoveErr = fmt.Errorf("client remove %s: %v", k, err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	job := func() api.JobInfo {
		ctx, cancel := ctxT(20 * time.Second)
		defer cancel()
		var resp api.JobListResponse
		if err := cl.Call(ctx, api.MethodJobList, &api.Empty{}, &resp); err != nil {
			t.Fatalf("jobs: %v", err)
		}
		for _, j := range resp.Jobs {
			if j.ID == id {
				return j
			}
		}
		t.Fatalf("job %d not listed", id)
		return api.JobInfo{}
	}
	sawPaused := false
	waitJob := func(what string, d time.Duration, cond func(api.JobInfo) bool) api.JobInfo {
		deadline := time.Now().Add(d)
		for {
			j := job()
			sawPaused = sawPaused || j.State == api.JobPausedRegistryFull
			if cond(j) {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %v: %s; job %+v", d, what, j)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	mid := waitJob("job past 40% of the keys", 2*time.Minute, func(j api.JobInfo) bool { return j.Removed > int64(nKeys)*4/10 })
	t.Logf("before the kill: %d keys in %v (%.0f keys/s)", mid.Removed, time.Since(start).Round(time.Millisecond), float64(mid.Removed)/time.Since(start).Seconds())
	killed := c.leader()
	killed.proc.kill()
	killedAt := time.Now()
	t.Logf("SIGKILL %s with the job at %d removed, cursor %q", killed.id, mid.Removed, mid.Cursor)
	resumed := waitJob("job moving again after the leader's SIGKILL", 2*time.Minute, func(j api.JobInfo) bool { return j.Removed > mid.Removed })
	resumeTook := time.Since(killedAt)
	done := waitJob("job done after the leader's SIGKILL", 3*time.Minute, func(j api.JobInfo) bool { return !j.Active() })
	took := time.Since(start)
	afterResume := time.Since(killedAt) - resumeTook
	t.Logf("the new leader moved the job %v after the kill; after that %d keys in %v (%.0f keys/s)", resumeTook.Round(time.Millisecond),
		done.Removed-resumed.Removed, afterResume.Round(time.Millisecond), float64(done.Removed-resumed.Removed)/afterResume.Seconds())
	removerWG.Wait()

	if done.State != api.JobDone {
		t.Fatalf("job ended %s", done.State)
	}
	if want := int64(nKeys - 2); done.Removed != want || done.Removed <= mid.Removed {
		t.Fatalf("job removed %d (had %d at the kill), want %d", done.Removed, mid.Removed, want)
	}
	if clientRemoveErr != nil {
		t.Fatal(clientRemoveErr)
	}
	t.Logf("prefix delete: %d keys in %v (%.0f keys/s), %d steps, paused for a full registry: %v, %d tasks acked",
		done.Removed, took.Round(time.Millisecond), float64(done.Removed)/took.Seconds(), done.Steps, sawPaused, acked.Load())

	// What stays and what is gone, read through the surviving leader.
	for _, k := range append(after, outside[200:]...) {
		ctx, cancel := ctxT(20 * time.Second)
		err := cl.Call(ctx, api.MethodGet, &api.KeyRequest{Key: k}, &api.GetResponse{})
		cancel()
		if err != nil {
			t.Fatalf("get %s (put after the start, or outside the prefix): %v", k, err)
		}
	}
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	var ls api.ListResponse
	if err := cl.Call(ctx, api.MethodList, &api.ListRequest{Prefix: "bulk/", Limit: 100}, &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls.Objects) != len(after) {
		t.Fatalf("bulk/ holds %d keys after the job, want the %d put after its start", len(ls.Objects), len(after))
	}
	jobsOut := runCLI(t, "operator", "jobs", "--masters", masters)
	if !strings.Contains(jobsOut, "done") {
		t.Fatalf("operator jobs:\n%s", jobsOut)
	}
}

// putBatchMeta puts keys (one batch) as metadata-only objects.
func putBatchMeta(cl *transport.ClusterClient, keys []string, pool string) error {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	starts := &api.BatchPutStartRequest{}
	for _, k := range keys {
		starts.Items = append(starts.Items, api.PutStartRequest{Key: k, Size: 16, ReplicaNum: 1, Pool: pool})
	}
	var sr api.BatchPutStartResponse
	if err := cl.Call(ctx, api.MethodBatchPutStart, starts, &sr); err != nil {
		return err
	}
	ends := &api.BatchPutEndRequest{}
	for i, r := range sr.Results {
		if r.Err != nil {
			return fmt.Errorf("put start %s: %v", keys[i], r.Err)
		}
		ends.Items = append(ends.Items, api.PutEndRequest{Key: keys[i], Incarnation: r.Incarnation})
	}
	var er api.BatchPutEndResponse
	if err := cl.Call(ctx, api.MethodBatchPutEnd, ends, &er); err != nil {
		return err
	}
	for _, r := range er.Results {
		if r.Err != nil {
			return fmt.Errorf("put end %s: %v", r.Key, r.Err)
		}
	}
	return nil
}

// ackBatch fetches one batch of h's tasks (waiting up to 200 ms) and acks
// them all as removed; it returns how many it acked.
func ackBatch(cl *transport.ClusterClient, h *fakeHolder) int {
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	fr, err := cl.HolderLink().Fetch(ctx, &api.FetchTasksRequest{Segment: h.seg, MountEpoch: h.epoch, Limit: api.MaxFetchLimit, WaitMillis: 200})
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return 0
	}
	if len(fr.Tasks) == 0 {
		return 0
	}
	req := &api.AckTasksRequest{Segment: h.seg, MountEpoch: h.epoch}
	for _, tk := range fr.Tasks {
		req.Results = append(req.Results, api.TaskResult{TaskID: tk.ID, Key: tk.Key, Incarnation: tk.Incarnation, Outcome: api.AckRemoved})
	}
	if _, err := cl.HolderLink().Ack(ctx, req); err != nil {
		time.Sleep(50 * time.Millisecond)
		return 0
	}
	return len(fr.Tasks)
}
