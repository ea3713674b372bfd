package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sexton/internal/testutil"
)

// cliOutcome runs one `sexton` client verb and classifies what its exit
// status and message claim: "ok" (exit 0), "absent" (exit 1 naming
// OBJECT_NOT_FOUND), "unknown" (exit 4, OUTCOME_UNKNOWN, or killed by the
// test's own deadline), "" (any other definite failure).
func cliOutcome(ctx context.Context, args ...string) (string, []byte, string) {
	cmd := exec.CommandContext(ctx, binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "ok", stdout.Bytes(), ""
	case ctx.Err() != nil:
		return "unknown", nil, "killed at the test's deadline"
	case errors.As(err, &ee) && ee.ExitCode() == 4:
		return "unknown", nil, stderr.String()
	case errors.As(err, &ee) && ee.ExitCode() == 1 && strings.Contains(stderr.String(), "OBJECT_NOT_FOUND"):
		return "absent", nil, stderr.String()
	}
	return "", nil, fmt.Sprintf("%v: %s", err, stderr.String())
}

// Clients remove and re-put the same keys with the CLI while the leader is
// SIGKILLed repeatedly. Every put and rm that exited 0 is reflected in the
// final state, no acknowledged put is lost to a retried remove, and every
// exit status tells the truth: the history of what the commands claimed,
// closed by a read of every key once the cluster is quiet, is linearizable.
func TestCLIExitStatusTellsTheTruthUnderLeaderKills(t *testing.T) {
	c := linearizabilityCluster(t)
	seed := testSeed(t)
	h := newHistory()
	keys := []string{"cli/a", "cli/b", "cli/c", "cli/d"}
	common := []string{"--masters", strings.Join(c.addrs(), ","), "--timeout", "20s"}
	dir := t.TempDir()
	stop := make(chan struct{})
	var failMu sync.Mutex
	failures := map[string]int{} // message → count, for the log
	wait := testutil.RunWorkers(4, stop, func(w int) (func(n int) bool, func()) {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		return func(n int) bool {
			key := keys[rng.IntN(len(keys))]
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			call := time.Now()
			var in regOp
			var out regOut
			var msg string
			switch r := rng.IntN(10); {
			case r < 5:
				v := fmt.Sprintf("w%d-%d", w, n)
				f := filepath.Join(dir, v)
				if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
					t.Error(err)
					cancel()
					return false
				}
				in = regOp{Kind: "put", Key: key, Value: v}
				out.Outcome, _, msg = cliOutcome(ctx, append([]string{"put", key, f}, common...)...)
				if out.Outcome == "absent" {
					out.Outcome = "" // a definite failure of some step: nothing took effect
				}
			case r < 7:
				in = regOp{Kind: "get", Key: key}
				var v []byte
				out.Outcome, v, msg = cliOutcome(ctx, append([]string{"get", key}, common...)...)
				out.Value = string(v)
				if out.Outcome == "unknown" {
					out.Outcome = ""
				}
			default:
				in = regOp{Kind: "rm", Key: key}
				out.Outcome, _, msg = cliOutcome(ctx, append([]string{"rm", key}, common...)...)
			}
			cancel()
			if msg != "" {
				m := in.Kind + " " + out.Outcome + ": " + incPattern.ReplaceAllString(firstLine(msg), "INC")
				failMu.Lock()
				failures[m]++
				failMu.Unlock()
			}
			h.record(w, in, call, out)
			return true
		}, nil
	})
	kills := killLeaderEvery(t, c, 3*time.Second, 4)
	close(stop)
	wait()
	t.Logf("leader killed %d times", kills)
	for m, n := range failures {
		t.Logf("%4d × %s", n, m)
	}
	for _, k := range []string{"put/ok", "put/unknown", "rm/ok", "rm/absent", "rm/unknown", "get/ok", "get/absent"} {
		t.Logf("%-12s %d", k, h.counts[k])
	}
	// Close the history with a quiet read of every key.
	for _, key := range keys {
		call := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		outcome, v, msg := cliOutcome(ctx, append([]string{"get", key}, common...)...)
		cancel()
		if outcome != "ok" && outcome != "absent" {
			t.Fatalf("final get %s: %s", key, msg)
		}
		h.record(99, regOp{Kind: "get", Key: key}, call, regOut{Outcome: outcome, Value: string(v)})
	}
	h.check(t, seed)
	if h.counts["put/ok"] == 0 || h.counts["rm/ok"] == 0 {
		t.Fatalf("the workload acknowledged too little to mean anything: %v", h.counts)
	}
}

// incPattern matches an incarnation as messages print it, so that the
// log groups failures by kind, not by incarnation.
var incPattern = regexp.MustCompile(`[0-9a-f]{16}:[0-9]+`)

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160]
	}
	return s
}
