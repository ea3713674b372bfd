package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"sexton/api"
	"sexton/client"
	"sexton/internal/testutil"
)

// The checks in this file record what real clients were told while they
// ran put, get and rm on a few keys, and ask porcupine whether some order
// of those operations, each taking effect between its call and its return,
// explains every answer (one register per key). An operation whose
// outcome the client could not know (OUTCOME_UNKNOWN, a timeout) may take
// effect at any time after its call, so it is recorded with no return; an
// operation that failed definitely (NOT_FOUND on a put's PutEnd, a refused
// grant...) is left out: if it nevertheless took effect, a later read shows
// a value or an absence that nothing in the history explains, and the
// check fails. That is how "every exit status tells the truth" is checked.

type regOp struct {
	Kind  string // "put", "get", "rm", "jobrm" (a prefix job's removal of Key)
	Key   string
	Value string // put: the value written
	// JobCall and JobStarted (jobrm only) are when the job's JobStart was
	// called and when it returned, in the history's nanoseconds
	// (JobStarted 1<<62 when its outcome was unknown).
	JobCall, JobStarted int64
}

type regOut struct {
	Outcome string // "ok", "absent" (get / rm found nothing), "unknown"
	Value   string // get: the value read
}

// registerModel is one register per key; "" is an absent key.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regOp).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(regOp), output.(regOut)
		switch in.Kind {
		case "put":
			return true, in.Value // ok, or unknown taken as done (placed last if not)
		case "rm":
			switch out.Outcome {
			case "ok":
				return s != "", ""
			case "absent":
				return s == "", s
			default:
				return true, ""
			}
		case "get":
			if out.Outcome == "absent" {
				return s == "", s
			}
			return s == out.Value, s
		}
		return false, s
	},
	Equal: func(a, b any) bool { return a == b },
	DescribeOperation: func(input, output any) string {
		in, out := input.(regOp), output.(regOut)
		switch in.Kind {
		case "put":
			return fmt.Sprintf("put(%s, %s) → %s", in.Key, in.Value, out.Outcome)
		case "get":
			if out.Outcome == "absent" {
				return fmt.Sprintf("get(%s) → absent", in.Key)
			}
			return fmt.Sprintf("get(%s) → %s", in.Key, out.Value)
		}
		if in.Kind == "jobrm" {
			return fmt.Sprintf("prefix job removes %s? → %s", in.Key, out.Outcome)
		}
		return fmt.Sprintf("rm(%s) → %s", in.Key, out.Outcome)
	},
	DescribeState: func(state any) string {
		if state == "" {
			return "absent"
		}
		return state.(string)
	},
}

// history collects operations from concurrent clients.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
	// counts by kind/outcome, for the log and for assertions
	counts map[string]int
}

func newHistory() *history { return &history{start: time.Now(), counts: map[string]int{}} }

// record adds an operation; outcome "" means it failed definitely and is
// left out of the history.
func (h *history) record(clientID int, in regOp, call time.Time, out regOut) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recordLocked(clientID, in, call, out)
}

func (h *history) recordLocked(clientID int, in regOp, call time.Time, out regOut) {
	h.counts[in.Kind+"/"+out.Outcome]++
	if out.Outcome == "" {
		return
	}
	ret := time.Since(h.start).Nanoseconds()
	if out.Outcome == "unknown" {
		ret = 1 << 62 // may take effect at any time after its call
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: clientID, Input: in, Call: call.Sub(h.start).Nanoseconds(), Output: out, Return: ret})
}

// check fails t unless the history is linearizable; on a violation it
// writes porcupine's visualization and names the seed.
func (h *history) check(t *testing.T, seed uint64) { h.checkWithin(t, seed, 60*time.Second) }

// checkWithin is check with the time porcupine may take.
func (h *history) checkWithin(t *testing.T, seed uint64, limit time.Duration) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Logf("history: %d operations recorded; outcomes %v", len(h.ops), h.counts)
	model := modelFor(h.ops)
	res, info := porcupine.CheckOperationsVerbose(model, h.ops, limit)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		t.Fatalf("linearizability check timed out (seed %d)", seed)
	}
	dir := os.Getenv("SEXTON_PORCUPINE_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-seed%d.html", strings.ReplaceAll(t.Name(), "/", "_"), seed))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Logf("visualization: %v", err)
	}
	t.Fatalf("history is not linearizable (seed %d); visualization in %s", seed, path)
}

// clientOutcome classifies a client library error.
func clientOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case api.CodeOf(err) == api.CodeOutcomeUnknown, errors.Is(err, context.DeadlineExceeded):
		return "unknown"
	case api.CodeOf(err) == api.CodeObjectNotFound:
		return "absent"
	}
	return ""
}

// putOutcome is clientOutcome for a put, whose NOT_FOUND (the PutEnd of
// a revoked put) did nothing.
func putOutcome(err error) string {
	if out := clientOutcome(err); out != "absent" {
		return out
	}
	return ""
}

// getOutcome is clientOutcome for a get: a read that got no answer says
// nothing.
func getOutcome(err error) string {
	if out := clientOutcome(err); out != "unknown" {
		return out
	}
	return ""
}

// registerWorkload runs clients doing put/get/rm on keys until stop closes.
func registerWorkload(t *testing.T, c *cluster, h *history, clients int, keys []string, seed uint64, stop <-chan struct{}) (getErrors *atomic.Int64, wait func()) {
	getErrors = &atomic.Int64{}
	wait = testutil.RunWorkers(clients, stop, func(w int) (func(n int) bool, func()) {
		cl, err := client.New(client.Config{Masters: c.addrs(), Token: c.token, Timeout: 20 * time.Second, AttemptTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		return func(n int) bool {
			key := keys[rng.IntN(len(keys))]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			call := time.Now()
			switch r := rng.IntN(10); {
			case r < 4:
				v := fmt.Sprintf("c%d-%d", w, n)
				_, err := cl.Put(ctx, key, []byte(v), client.PutOptions{})
				out := putOutcome(err)
				if out == "" && err != nil && api.CodeOf(err) != api.CodeObjectAlreadyExists {
					t.Logf("put %s: %v", key, err)
				}
				h.record(w, regOp{Kind: "put", Key: key, Value: v}, call, regOut{Outcome: out})
			case r < 7:
				v, _, err := cl.Get(ctx, key)
				out := getOutcome(err)
				if out == "" {
					getErrors.Add(1)
					t.Logf("get %s: %v", key, err)
				}
				h.record(w, regOp{Kind: "get", Key: key}, call, regOut{Outcome: out, Value: string(v)})
			default:
				err := cl.Remove(ctx, key)
				if clientOutcome(err) == "" {
					t.Logf("rm %s: %v", key, err)
				}
				h.record(w, regOp{Kind: "rm", Key: key}, call, regOut{Outcome: clientOutcome(err)})
			}
			cancel()
			return true
		}, cl.Close
	})
	return getErrors, wait
}

// linearizabilityCluster is three masters and two holders.
func linearizabilityCluster(t *testing.T) *cluster {
	c := startCluster(t, 3)
	c.startHolder(t, "h1", "lin")
	c.startHolder(t, "h2", "lin")
	return c
}

func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEXTON_TEST_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (SEXTON_TEST_SEED=%d repeats it)", seed, seed)
	return seed
}

// With no fault at all, every read answers and the history is
// linearizable: a read that races an overwrite returns the old or the new
// value, never "absent" and never an error.
func TestLinearizableNoFaults(t *testing.T) {
	h, getErrors := linearizableRun(t, func(*cluster) { time.Sleep(8 * time.Second) })
	if getErrors > 0 {
		t.Fatalf("%d reads failed with no fault injected", getErrors)
	}
	if n := h.counts["put/unknown"] + h.counts["rm/unknown"]; n > 0 {
		t.Fatalf("%d outcomes unknown with no fault injected", n)
	}
}

// With the leader SIGKILLed every few seconds (and restarted), the history
// stays linearizable.
func TestLinearizableLeaderKills(t *testing.T) {
	linearizableRun(t, func(c *cluster) {
		t.Logf("leader killed %d times", killLeaderEvery(t, c, 3*time.Second, 4))
	})
}

// linearizableRun runs four clients of registerWorkload on three keys of
// a linearizabilityCluster while fault(c) runs, then stops them and checks
// that the history is linearizable; it returns the history and how many
// reads failed.
func linearizableRun(t *testing.T, fault func(c *cluster)) (*history, int64) {
	c := linearizabilityCluster(t)
	seed := testSeed(t)
	h := newHistory()
	stop := make(chan struct{})
	getErrors, wait := registerWorkload(t, c, h, 4, []string{"lin/a", "lin/b", "lin/c"}, seed, stop)
	fault(c)
	close(stop)
	wait()
	h.check(t, seed)
	return h, getErrors.Load()
}

// killLeaderEvery SIGKILLs the ready leader every period, restarting it
// half a second later, rounds times; it returns how many kills happened.
func killLeaderEvery(t *testing.T, c *cluster, period time.Duration, rounds int) int {
	kills := 0
	for i := 0; i < rounds; i++ {
		time.Sleep(period)
		m := c.waitLeader(30 * time.Second)
		m.kill()
		kills++
		time.Sleep(500 * time.Millisecond)
		m.proc.start()
	}
	time.Sleep(period)
	return kills
}
