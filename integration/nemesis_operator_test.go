package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/internal/testutil"
)

// The operator's paths under the nemesis: a prefix-delete job runs beside
// the clients (its removals are part of the checked history, jobmodel_test.go),
// and two faults try what must be refused on a serving cluster. A refusal
// changes nothing, which the history's linearizability and the disk check
// then prove; an acceptance is reported at once.

// operatorFault runs one operator fault; it is called with every other
// fault healed.
func (r *nemesisRun) operatorFault(kind string, hold time.Duration, sleep func(time.Duration) bool) {
	nc := r.nc
	masters := "--masters=" + strings.Join(nc.proxiedMasters(), ",")
	switch kind {
	case "restore-old":
		file := filepath.Join(nc.t.TempDir(), fmt.Sprintf("old-%d.snap", time.Now().UnixNano()))
		if out, err := runCLIErr("operator", "snapshot", "save", file, masters, "--timeout=10s"); err != nil {
			r.note(kind+"-skipped", fmt.Sprintf("restore-old: save failed (%v): %s", err, tail(out, 200)))
			return
		}
		sleep(hold) // the clients move the cluster past the file
		out, err := runCLIErr("operator", "snapshot", "restore", file, masters, "--timeout=10s")
		os.Remove(file)
		if err == nil {
			nc.t.Errorf("restore-old: a snapshot older than the cluster was restored without --allow-rollback: %s", tail(out, 400))
			r.note(kind+"-ACCEPTED", "restore of an older snapshot accepted")
			return
		}
		r.note(kind, fmt.Sprintf("restore of a snapshot %v old refused: %s", hold, firstLine(out)))
	case "rebuild-live":
		if nc.rebuilt {
			// A rerun on the rebuilt cluster while clients run: it may
			// adopt nothing new, and must not bring back anything removed
			// since (the history and the disk check judge that); a
			// per-item refusal (a put in flight) is a fine answer.
			out, err := runCLIErr("operator", "rebuild", masters, "--dfs-root="+nc.dfsRoot, "--timeout=20s") // the cluster knows its holders
			verdict := "done"
			if err != nil {
				verdict = "failed"
			}
			r.note("rebuild-rerun", fmt.Sprintf("rerun of the rebuild on the serving cluster %s: %s", verdict, lastLine(out)))
			if n := rerunAdopted(out); n > 0 {
				// Every holder was scanned by the first rebuild: a copy a
				// rerun finds new is one the serving cluster issued, whose
				// fate its own table decides (a revoked put's, say).
				nc.t.Errorf("rebuild-live: a rerun adopted %d objects on a cluster whose every holder the first rebuild scanned: %s", n, lastLine(out))
			}
			return
		}
		out, err := runCLIErr("operator", "rebuild", masters, "--timeout=10s")
		if err == nil {
			nc.t.Errorf("rebuild-live: operator rebuild ran on a serving cluster: %s", tail(out, 400))
			r.note(kind+"-ACCEPTED", "rebuild on a serving cluster accepted")
			return
		}
		r.note(kind, "rebuild on the serving cluster refused: "+lastLine(out))
	}
}

// nemesisJobKeys are the keys the prefix jobs work on: quiet keys of
// their own, so the check can tell what a job removed.
var nemesisJobKeys = []string{"nem/job/a", "nem/job/b", "nem/job/c", "nem/job/d"}

// nemesisPrefixJobs runs rounds until stop closes: put every job key, start
// a prefix-delete job over them, put half of them again as soon as the
// JobStart returned, wait for the job, read every key. Every call is in the
// history, the job as one removal per key (jobmodel_test.go): the keys put
// only before the job must read absent, the keys put after it must read
// their new value.
func nemesisPrefixJobs(t *testing.T, nc *nemesisCluster, h *history, seed uint64, stop <-chan struct{}) (wait func()) {
	cl, err := client.New(client.Config{Masters: nc.proxiedMasters(), Timeout: 15 * time.Second, AttemptTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const id = 500 // the history's client id of these calls
	put := func(key, v string) {
		ctx, cancel := ctxT(20 * time.Second)
		defer cancel()
		call := time.Now()
		_, err := cl.Put(ctx, key, nemesisValue(v), client.PutOptions{Pool: "nem"})
		out := clientOutcome(err)
		if out == "absent" {
			out = ""
		}
		h.record(id, regOp{Kind: "put", Key: key, Value: v}, call, regOut{Outcome: out})
	}
	get := func(key string) {
		ctx, cancel := ctxT(20 * time.Second)
		defer cancel()
		call := time.Now()
		body, _, err := cl.Get(ctx, key)
		out := clientOutcome(err)
		if out == "unknown" {
			out = ""
		}
		v := ""
		if out == "ok" {
			v, _, _ = strings.Cut(string(body), ";")
			if string(nemesisValue(v)) != string(body) {
				t.Errorf("get %s: %d bytes that no put wrote", key, len(body))
			}
		}
		h.record(id, regOp{Kind: "get", Key: key}, call, regOut{Outcome: out, Value: v})
	}
	rng := rand.New(rand.NewPCG(seed, 999))
	rounds := testutil.RunWorkers(1, stop, func(int) (func(round int) bool, func()) {
		return func(round int) bool {
			select {
			case <-stop:
				return false
			case <-time.After(time.Duration(2+rng.IntN(4)) * time.Second):
			}
			for _, k := range nemesisJobKeys {
				put(k, fmt.Sprintf("j%d-%s", round, k[len(k)-1:]))
			}
			ctx, cancel := ctxT(60 * time.Second)
			call := time.Now()
			job, err := cl.StartPrefixDelete(ctx, "nem/job/", false)
			var started, done time.Time
			switch clientOutcome(err) {
			case "ok":
				started = time.Now()
				for i, k := range nemesisJobKeys {
					if i%2 == round%2 {
						put(k, fmt.Sprintf("j%d-%s-after", round, k[len(k)-1:]))
					}
				}
				if fin, err := cl.WaitJob(ctx, job.ID, nil); err == nil && fin.State == api.JobDone {
					done = time.Now()
				}
			case "unknown":
			default:
				cancel()
				return true // refused: it did nothing
			}
			cancel()
			h.recordJob(id, nemesisJobKeys, call, started, done)
			for _, k := range nemesisJobKeys {
				get(k)
			}
			return true
		}, cl.Close
	})
	return func() {
		rounds()
		// A job whose wait gave up under a fault still runs in the
		// cluster: the final reads come after it ended, or they race it.
		cl, err := client.New(client.Config{Masters: nc.proxiedMasters(), Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			ctx, cancel := ctxT(20 * time.Second)
			jobs, err := cl.Jobs(ctx)
			cancel()
			active := err != nil
			for _, j := range jobs.Jobs {
				active = active || j.Active()
			}
			if !active {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("a prefix job is still active 2 minutes after the last one started: %+v %v", jobs.Jobs, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// lastLine is the last non-empty line of s: the CLI's verdict after its
// progress lines.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// holderAddrs are the holders' advertised (proxied) data addresses, the
// endpoints the cluster records for them, so the rebuild's scan names each
// holder once.
func (nc *nemesisCluster) holderAddrs() string {
	var out []string
	for _, px := range nc.holderRPC {
		out = append(out, px.addr)
	}
	return strings.Join(out, ",")
}

// nemesisPreKeys are put before the masters lose their state; the rebuilt
// cluster must serve them (their puts are in the checked history).
var nemesisPreKeys = []string{"nem/pre/a", "nem/pre/b", "nem/pre/c"}

// rebuildUnderNemesis puts nemesisPreKeys (recorded in h), removes one of
// them again, then makes every master lose its state, bootstraps a fresh
// cluster on the same addresses and rebuilds it from the two holders
// with operator rebuild: the nemesis then runs on a rebuilt cluster,
// where rebuild-live is a rerun (and its removal memory is what keeps a
// key removed since the rebuild from coming back).
func (nc *nemesisCluster) rebuildUnderNemesis(t *testing.T, h *history) {
	t.Helper()
	cl, err := client.New(client.Config{Masters: nc.proxiedMasters(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, k := range nemesisPreKeys {
		v := fmt.Sprintf("pre%d", i)
		ctx, cancel := ctxT(20 * time.Second)
		call := time.Now()
		_, err := cl.Put(ctx, k, nemesisValue(v), client.PutOptions{Pool: "nem", Replicas: 1 + i%2})
		cancel()
		if err != nil {
			t.Fatalf("put %s before the rebuild: %v", k, err)
		}
		h.record(600, regOp{Kind: "put", Key: k, Value: v}, call, regOut{Outcome: "ok"})
	}
	ctx, cancel := ctxT(20 * time.Second)
	call := time.Now()
	err = cl.Remove(ctx, nemesisPreKeys[0])
	cancel()
	if err != nil {
		t.Fatalf("remove %s before the rebuild: %v", nemesisPreKeys[0], err)
	}
	h.record(600, regOp{Kind: "rm", Key: nemesisPreKeys[0]}, call, regOut{Outcome: "ok"})
	// The remove's tasks reach the holders before the masters are lost,
	// so the rebuild sees a tombstone, not a live copy it would adopt.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var tasks api.ListTasksResponse
		ctx, cancel := ctxT(10 * time.Second)
		err := cl.Call(ctx, api.MethodListTasks, &api.ListTasksRequest{Limit: 1000}, &tasks)
		cancel()
		if err == nil && len(tasks.Tasks) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks of the remove before the rebuild did not drain: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	nc.dfsPreRebuild(t)
	nc.loseEveryMaster(t)
	out, err := runCLIErr("operator", "rebuild", "--masters="+strings.Join(nc.proxiedMasters(), ","), "--holders="+nc.holderAddrs(), "--dfs-root="+nc.dfsRoot, "--timeout=30s")
	if err != nil {
		t.Fatalf("operator rebuild of the nemesis cluster: %v\n%s", err, out)
	}
	t.Logf("rebuilt: %s", lastLine(out))
	nc.rebuilt = true
	for _, hn := range nc.holders {
		nc.waitHolderMounted(t, hn)
	}
	nc.dfsCheck(t, "after the rebuild")
}

// rerunAdopted reads "adopted N" from a rebuild's report line; -1 when the
// output has none.
func rerunAdopted(out string) int {
	i := strings.LastIndex(out, "adopted ")
	if i < 0 {
		return -1
	}
	n := -1
	if _, err := fmt.Sscanf(out[i:], "adopted %d,", &n); err != nil {
		return -1
	}
	return n
}
