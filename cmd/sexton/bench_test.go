package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/devcluster"
)

// benchCluster starts a one-process cluster and a client of it.
func benchCluster(t *testing.T) (*devcluster.Cluster, *client.Client) {
	t.Helper()
	c, err := devcluster.Start(devcluster.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := client.New(client.Config{Masters: []string{c.MasterAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, cl
}

func clusterStatus(t *testing.T, cl *client.Client) api.StatusResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// countKeys lists every object under prefix.
func countKeys(t *testing.T, cl *client.Client, prefix string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, cursor := 0, ""
	for {
		objs, next, err := cl.List(ctx, prefix, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n += len(objs)
		if next == "" {
			return n
		}
		cursor = next
	}
}

// assertSimsUnmounted: a bench leaves none of its simulated holders mounted.
func assertSimsUnmounted(t *testing.T, cl *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var segs api.ListSegmentsResponse
	if err := cl.Call(ctx, api.MethodListSegments, &api.Empty{}, &segs); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs.Segments {
		if strings.HasPrefix(string(s.ID), "bench-sim-") && s.Mounted {
			t.Errorf("simulated holder %s is still mounted after the bench", s.ID)
		}
	}
}

// TestBenchLoadAddsExactlyN: bench load grows the cluster's object count
// by exactly --objects, all under --prefix, prints the rate per tenth and
// the master's memory, and a second run on the same prefix overwrites
// nothing: it fails naming OBJECT_ALREADY_EXISTS.
func TestBenchLoadAddsExactlyN(t *testing.T) {
	c, cl := benchCluster(t)
	const n = 2000
	before := clusterStatus(t, cl)
	args := []string{"bench", "load", "--objects", strconv.Itoa(n), "--clients", "4", "--batch", "100", "--segments", "3",
		"--prefix", "t/load/", "--masters", c.MasterAddr(), "--master-http", c.Master.HTTPAddr()}
	out, err := captureStdout(t, func() error { return run(args) })
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	after := clusterStatus(t, cl)
	if got := after.Objects - before.Objects; got != n {
		t.Errorf("object count grew by %d, want %d", got, n)
	}
	if got := countKeys(t, cl, "t/load/"); got != n {
		t.Errorf("%d objects under the prefix, want %d", got, n)
	}
	for _, want := range []string{"committed 2000 objects", "  90-100%", "bytes/object (RSS / ", "heap in use"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	assertSimsUnmounted(t, cl)

	out, err = captureStdout(t, func() error { return run(args) })
	if err == nil || !strings.Contains(err.Error(), "OBJECT_ALREADY_EXISTS") {
		t.Errorf("a second load on the same prefix: %v, want OBJECT_ALREADY_EXISTS\n%s", err, out)
	}
	if got := clusterStatus(t, cl).Objects; got != after.Objects {
		t.Errorf("a second load on the same prefix changed the object count %d → %d", after.Objects, got)
	}
	assertSimsUnmounted(t, cl)
}

// TestBenchHoldersAcksEveryRemove: after bench holders every key it
// removed is gone and its task acked (no task pending in the cluster),
// every Remove has a convergence figure, the leader's CPU is read, and
// the simulated holders are unmounted.
func TestBenchHoldersAcksEveryRemove(t *testing.T) {
	c, cl := benchCluster(t)
	before := clusterStatus(t, cl)
	args := []string{"bench", "holders", "--n", "20", "--duration", "3s", "--removes-per-sec", "100", "--prefix", "t/holders/",
		"--masters", c.MasterAddr(), "--master-http", c.Master.HTTPAddr()}
	out, err := captureStdout(t, func() error { return run(args) })
	t.Logf("%s", out)
	if err != nil {
		t.Error(err) // and see what the cluster says
	}
	after := clusterStatus(t, cl)
	if after.PendingTasks != before.PendingTasks {
		t.Errorf("pending tasks %d before, %d after: not every removed key's task was acked", before.PendingTasks, after.PendingTasks)
	}
	if after.Objects != before.Objects {
		t.Errorf("objects %d before, %d after: not every object put was removed", before.Objects, after.Objects)
	}
	if got := countKeys(t, cl, "t/holders/"); got != 0 {
		t.Errorf("%d objects left under the prefix", got)
	}
	m := regexp.MustCompile(`removes: (\d+) answered OK`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no removes line in %s", out)
	}
	removed, _ := strconv.Atoi(string(m[1]))
	if removed < 100 {
		t.Errorf("%d removes in 3s at 100/s", removed)
	}
	for _, want := range []string{
		"(" + strconv.Itoa(removed) + " of " + strconv.Itoa(removed) + " removes)",
		"tasks pending on the simulated holders: 0",
		"% of one core (" + c.Master.HTTPAddr(),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	assertSimsUnmounted(t, cl)
}

// TestParseMetrics: the unlabelled samples named are read, with or
// without a timestamp; labelled series, comments, other names and
// malformed lines are not.
func TestParseMetrics(t *testing.T) {
	text := `# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 6.5e+07
go_memstats_heap_inuse_bytes 1234 1700000000000
process_cpu_seconds_total{mode="user"} 99
process_cpu_seconds_total
process_cpu_seconds_total 
go_goroutines 12
`
	got := parseMetrics(text, []string{metricRSS, metricHeap, metricCPUSecs})
	want := map[string]float64{metricRSS: 6.5e7, metricHeap: 1234}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// TestBenchRemovePrintsCommitParts: bench remove removes every key it
// created, and with --master-http it prints the leader's commit taken
// apart over the timed removes, from the master's own histograms (the dev
// master installs raft's timings): at least one entry per batch of
// clients' requests, and a log write mean that is not zero.
func TestBenchRemovePrintsCommitParts(t *testing.T) {
	c, cl := benchCluster(t)
	before := clusterStatus(t, cl)
	args := []string{"bench", "remove", "--keys", "200", "--clients", "4", "--masters", c.MasterAddr(), "--master-http", c.Master.HTTPAddr()}
	out, err := captureStdout(t, func() error { return run(args) })
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if got := clusterStatus(t, cl).Objects; got != before.Objects {
		t.Errorf("object count %d before, %d after the removes", before.Objects, got)
	}
	m := regexp.MustCompile(`commit parts, leader \S+: (\d+) entries, propose→applied [0-9.]+ ms \(([0-9.]+) keys per Remove entry\), own log write ([0-9.]+) ms, log write start→committed [0-9.]+ ms`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no leader line of commit parts in the output")
	}
	entries, _ := strconv.Atoi(m[1])
	keysPer, _ := strconv.ParseFloat(m[2], 64)
	write, _ := strconv.ParseFloat(m[3], 64)
	// The last entry's timing may reach the master's histograms just after
	// its callers were answered and the bench read them (answers go out as
	// the leader applies, before raft records the commit): one entry fewer
	// than the removes need, and its keys counted on the others.
	if entries < 200/4-1 || entries > 200+10 || keysPer < 1 || keysPer > 4 || write <= 0 {
		t.Errorf("commit parts: %d entries, %.1f keys an entry, log write %.3f ms; want 49–210 entries of 1–4 keys (one entry may be missed) and a log write over 0", entries, keysPer, write)
	}
}

// TestCommitCycleSplitsTheLeadersEntryTime: the commit cycle line is
// the run's time per leader entry, split into the leader's log write plus
// its fastest follower's (the two that lie in a row on a commit) and the
// rest; a run with entries overlapped says so instead of a negative rest,
// and a run with two leaders (an election) prints no cycle at all.
func TestCommitCycleSplitsTheLeadersEntryTime(t *testing.T) {
	leader := func(entries, write float64) map[string]float64 {
		return map[string]float64{
			"sexton_raft_commit_seconds_count":                   entries,
			"sexton_raft_commit_seconds_sum":                     entries * 0.001,
			`sexton_raft_log_write_seconds_count{role="leader"}`: entries,
			`sexton_raft_log_write_seconds_sum{role="leader"}`:   entries * write,
		}
	}
	follower := func(writes, write float64) map[string]float64 {
		return map[string]float64{
			`sexton_raft_log_write_seconds_count{role="follower"}`: writes,
			`sexton_raft_log_write_seconds_sum{role="follower"}`:   writes * write,
		}
	}
	p := &masterProbe{addrs: []string{"m1", "m2", "m3"}}
	zero := histogramReading{"m1": {}, "m2": {}, "m3": {}}
	cycleLine := func(t *testing.T, after histogramReading, elapsed time.Duration) string {
		t.Helper()
		out, err := captureStdout(t, func() error { p.printCommitParts(zero, after, elapsed); return nil })
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "commit cycle") {
				return strings.TrimSpace(line)
			}
		}
		return ""
	}
	// 1,000 entries in 1.5 s: 1.5 ms an entry; 0.4 ms on the leader, the
	// faster follower 0.5 ms (the slower one's 0.7 ms is off the path).
	got := cycleLine(t, histogramReading{"m1": leader(1000, 0.0004), "m2": follower(1000, 0.0007), "m3": follower(1000, 0.0005)}, 1500*time.Millisecond)
	want := "commit cycle: 1.500 ms an entry (1000 entries in 1.50 s): the two log writes in a row 0.900 ms (the leader's 0.400 ms, the fastest follower's 0.500 ms), the rest 0.600 ms (transport, hand-offs, apply, answers, the clients' round trips)"
	if got != want {
		t.Errorf("one leader:\n got %q\nwant %q", got, want)
	}
	got = cycleLine(t, histogramReading{"m1": leader(1000, 0.0004), "m2": follower(1000, 0.0005), "m3": follower(1000, 0.0005)}, 800*time.Millisecond)
	if want := "commit cycle: 0.800 ms an entry (1000 entries in 0.80 s), shorter than its two log writes in a row (0.900 ms): entries overlapped"; got != want {
		t.Errorf("overlapped:\n got %q\nwant %q", got, want)
	}
	if got = cycleLine(t, histogramReading{"m1": leader(500, 0.0004), "m2": leader(500, 0.0004), "m3": follower(1000, 0.0005)}, time.Second); got != "" {
		t.Errorf("two leaders: printed %q, want no cycle line", got)
	}
}

// TestParseHistograms: the _sum and _count series of the named histograms
// are read, labelled or not, keyed as written; buckets, other names and
// malformed lines are not.
func TestParseHistograms(t *testing.T) {
	text := `# TYPE sexton_raft_log_write_seconds histogram
sexton_raft_log_write_seconds_bucket{role="leader",le="0.001"} 3
sexton_raft_log_write_seconds_sum{role="leader"} 0.0025
sexton_raft_log_write_seconds_count{role="leader"} 5
sexton_raft_commit_seconds_sum 1.5 1700000000000
sexton_raft_commit_seconds_count 1000
sexton_raft_commit_seconds_count
sexton_fsm_apply_seconds_sum 9
`
	got := parseHistograms(text, []string{"sexton_raft_log_write_seconds", "sexton_raft_commit_seconds"})
	want := map[string]float64{
		`sexton_raft_log_write_seconds_sum{role="leader"}`:   0.0025,
		`sexton_raft_log_write_seconds_count{role="leader"}`: 5,
		"sexton_raft_commit_seconds_sum":                     1.5,
		"sexton_raft_commit_seconds_count":                   1000,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if mean, n := histogramMean(nil, got, "sexton_raft_log_write_seconds", `{role="leader"}`); n != 5 || mean != 0.0005 {
		t.Errorf("mean %v over %v, want 0.0005 over 5", mean, n)
	}
}

// TestLoadRepeatCountsWhatAnEarlierAttemptCommitted: when bench load sends
// a batch again after a call got no answer, the items that attempt did not
// commit count as committed exactly when their key exists.
func TestLoadRepeatCountsWhatAnEarlierAttemptCommitted(t *testing.T) {
	c, _ := benchCluster(t)
	args := []string{"bench", "load", "--objects", "2", "--segments", "1", "--prefix", "t/rep/", "--masters", c.MasterAddr()}
	if out, err := captureStdout(t, func() error { return run(args) }); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	e := &env{masters: c.MasterAddr(), timeout: 10 * time.Second}
	defer e.close()
	cl, err := e.client()
	if err != nil {
		t.Fatal(err)
	}
	items := []api.PutStartRequest{{Key: "t/rep/0000000000"}, {Key: "t/rep/never"}, {Key: "t/rep/0000000001"}, {Key: "t/rep/now"}}
	n, itemErr, err := settleRepeat(e, cl, items, []int{3}, api.ErrObjectAlreadyExists)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || itemErr == nil || !strings.Contains(itemErr.Error(), "1 objects of a batch sent again were not created") {
		t.Errorf("settleRepeat = %d, %v; want 3 and an error naming the 1 not created", n, itemErr)
	}
	n, itemErr, err = settleRepeat(e, cl, items[:1], nil, api.ErrObjectAlreadyExists)
	if err != nil || n != 1 || itemErr != nil {
		t.Errorf("settleRepeat of an existing key = %d, %v, %v; want 1, nil, nil", n, itemErr, err)
	}
}

// bench put takes the mean put apart: its master round trips (PutStart,
// PutEnd) and holder write from the client's trace, with the rest the
// client's own; the holder's fsyncs from its histogram (one group commit
// at least); and the CPU per put of the bench, the master and the holder.
func TestBenchPutPrintsCriticalPath(t *testing.T) {
	c, _ := benchCluster(t)
	args := []string{"bench", "put", "--n", "60", "--clients", "4", "--size", "1KiB", "--masters", c.MasterAddr(),
		"--master-http", c.Master.HTTPAddr(), "--holder-http", c.Holder.HTTPAddr()}
	out, err := captureStdout(t, func() error { return run(args) })
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	// The master methods are whatever the client calls (PutStart and
	// PutEnd here); every part is "NAME X ms", and they add up.
	m := regexp.MustCompile(`put critical path, mean of 60 puts: (.*) = ([0-9.]+) ms`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no critical path line for 60 puts")
	}
	total, _ := strconv.ParseFloat(m[2], 64)
	var sum float64
	seen := map[string]float64{}
	for _, part := range strings.Split(m[1], ", ") {
		pm := regexp.MustCompile(`^(.+?) (-?[0-9.]+) ms( \([0-9.]+ per put\))?$`).FindStringSubmatch(part)
		if pm == nil {
			t.Fatalf("part %q is not NAME X ms", part)
		}
		v, _ := strconv.ParseFloat(pm[2], 64)
		seen[pm[1]] = v
		sum += v
	}
	masterParts := len(seen) - 2 // all but the holder write and the rest
	if seen["holder write"] <= 0 || seen["client-side rest"] < 0 || masterParts < 1 || sum < total-0.002 || sum > total+0.002 {
		t.Errorf("parts %v (total %.3f): want master round trips, a holder write over 0, a rest ≥ 0, adding up to the total", seen, total)
	}
	for name, v := range seen {
		if name != "client-side rest" && v <= 0 {
			t.Errorf("part %s is %.3f ms, want > 0", name, v)
		}
	}
	if !regexp.MustCompile(`holder fsync \(the holders' sexton_holder_put_sync_seconds\), mean per group commit: data fsync [0-9.]+ ms, metadata persist [0-9.]+ ms, over [1-9][0-9]* group commits`).Match(out) {
		t.Errorf("no holder fsync line from the holder's histogram")
	}
	if !regexp.MustCompile(`CPU per put: this process [0-9]+ µs, masters [0-9]+ µs \(\S+ [0-9]+ µs\), holders [0-9]+ µs \(\S+ [0-9]+ µs\)`).Match(out) {
		t.Errorf("no CPU per put line with the master's and the holder's share")
	}
}
