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
	c, _ := devCluster(t)
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
