package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sexton/internal/testutil"
)

// DFS objects under the nemesis: the masters and the CLI share a DFS root
// (MOONCAKE_DFS_FSYNC=1). The rebuild round puts DFS-only keys, overwrites
// one and removes one before the masters lose their state, and rebuilds
// with --dfs-root; every rerun passes it too. A client runs DFS puts, gets
// and removes through the CLI and the proxies while the faults hit. The
// check: every acknowledged DFS put not removed reads back byte-identical
// after the rebuild and after the run, and no removed DFS key comes back.
// The keys are outside "nem/" so the holders' disk check does not count
// their DFS replicas.

// nemesisDFSPreKeys are put (the second twice) and nemesisDFSPreKeys[2]
// removed before the masters lose their state.
var nemesisDFSPreKeys = []string{"dfsnem/pre/a", "dfsnem/pre/b", "dfsnem/pre/c"}

// nemesisDFSKeys are the keys of the DFS client during the faults.
var nemesisDFSKeys = []string{"dfsnem/w/a", "dfsnem/w/b", "dfsnem/w/c"}

// nemesisDFSState is what the checks expect of the DFS keys: for each key
// the values it may read back ("" for absent; more than one after a call
// of unknown outcome).
type nemesisDFSState struct {
	mu      sync.Mutex
	allowed map[string]map[string][]byte
	ops     map[string]int
}

func newNemesisDFSState() *nemesisDFSState {
	return &nemesisDFSState{allowed: map[string]map[string][]byte{}, ops: map[string]int{}}
}

func (s *nemesisDFSState) set(key, label string, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allowed[key] = map[string][]byte{label: v}
}

func (s *nemesisDFSState) add(key, label string, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allowed[key] == nil {
		s.allowed[key] = map[string][]byte{"": nil}
	}
	s.allowed[key][label] = v
}

func (s *nemesisDFSState) count(op string) {
	s.mu.Lock()
	s.ops[op]++
	s.mu.Unlock()
}

// check reports whether got (nil: absent) is a value key may hold.
func (s *nemesisDFSState) check(key string, got []byte, absent bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	allowed := s.allowed[key]
	if allowed == nil {
		allowed = map[string][]byte{"": nil}
	}
	if absent {
		if _, ok := allowed[""]; ok {
			return nil
		}
		return fmt.Errorf("%s reads absent, want one of %d acknowledged values", key, len(allowed))
	}
	for label, v := range allowed {
		if label != "" && bytes.Equal(v, got) {
			return nil
		}
	}
	return fmt.Errorf("%s reads %d bytes that are none of its possible values (removed: %v)", key, len(got), len(allowed) == 1 && allowed[""] == nil)
}

func nemesisDFSValue(label string) []byte {
	n := 1000 + len(label)*131%4000
	return []byte(strings.Repeat(label+";", n/(len(label)+1)+1))[:n]
}

// dfsCall runs the CLI with the DFS environment against the proxied
// masters, bounded by d.
func (nc *nemesisCluster) dfsCall(d time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--masters", strings.Join(nc.proxiedMasters(), ","))...)
	cmd.Env = append(os.Environ(), nc.dfsEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (nc *nemesisCluster) dfsPutCall(t *testing.T, key string, v []byte) error {
	f := filepath.Join(t.TempDir(), "v")
	if err := os.WriteFile(f, v, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := nc.dfsCall(30*time.Second, "put", "--dfs-replicas", "1", key, f)
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(out))
	}
	return nil
}

// dfsGetCall reads key: its bytes, absent, or an error.
func (nc *nemesisCluster) dfsGetCall(t *testing.T, key string) ([]byte, bool, error) {
	f := filepath.Join(t.TempDir(), "out")
	out, err := nc.dfsCall(30*time.Second, "get", key, "-o", f)
	if err != nil {
		if strings.Contains(out, "OBJECT_NOT_FOUND") {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%v: %s", err, lastLine(out))
	}
	b, err := os.ReadFile(f)
	return b, false, err
}

// dfsPreRebuild puts the DFS pre-keys before the masters lose their state.
func (nc *nemesisCluster) dfsPreRebuild(t *testing.T) {
	t.Helper()
	for i, k := range nemesisDFSPreKeys {
		label := fmt.Sprintf("%s#pre%d", k, i)
		v := nemesisDFSValue(label)
		if err := nc.dfsPutCall(t, k, v); err != nil {
			t.Fatalf("DFS put %s before the rebuild: %v", k, err)
		}
		nc.dfs.set(k, label, v)
	}
	k := nemesisDFSPreKeys[1]
	label := k + "#over"
	v := nemesisDFSValue(label)
	if err := nc.dfsPutCall(t, k, v); err != nil {
		t.Fatalf("DFS overwrite %s before the rebuild: %v", k, err)
	}
	nc.dfs.set(k, label, v)
	// --wait: the removal record is written, so the removal is done for
	// the rebuild (dfsio/DESIGN.md "Range records").
	if out, err := nc.dfsCall(60*time.Second, "rm", "--wait=50s", nemesisDFSPreKeys[2]); err != nil {
		t.Fatalf("DFS rm %s before the rebuild: %v\n%s", nemesisDFSPreKeys[2], err, out)
	}
	nc.dfs.set(nemesisDFSPreKeys[2], "", nil)
}

// dfsCheck reads every DFS key and checks it against what was
// acknowledged.
func (nc *nemesisCluster) dfsCheck(t *testing.T, when string) {
	t.Helper()
	for _, k := range append(append([]string{}, nemesisDFSPreKeys...), nemesisDFSKeys...) {
		var got []byte
		var absent bool
		var err error
		for attempt := 0; attempt < 10; attempt++ {
			if got, absent, err = nc.dfsGetCall(t, k); err == nil {
				break
			}
			time.Sleep(time.Second)
		}
		if err != nil {
			t.Fatalf("DFS get %s %s keeps failing: %v", k, when, err)
		}
		if err := nc.dfs.check(k, got, absent); err != nil {
			t.Errorf("DFS %s: %v", when, err)
		}
	}
}

// nemesisDFSWorkload runs DFS puts, gets and removes on nemesisDFSKeys,
// one call at a time, until stop closes. A call whose outcome is unknown
// widens what its key may read; a get must read a possible value.
func nemesisDFSWorkload(t *testing.T, nc *nemesisCluster, seed uint64, stop <-chan struct{}) (wait func()) {
	rng := rand.New(rand.NewPCG(seed, 777))
	return testutil.RunWorkers(1, stop, func(int) (func(n int) bool, func()) {
		return func(n int) bool {
			select {
			case <-stop:
				return false
			case <-time.After(time.Duration(100+rng.IntN(400)) * time.Millisecond):
			}
			k := nemesisDFSKeys[rng.IntN(len(nemesisDFSKeys))]
			switch r := rng.IntN(10); {
			case r < 5:
				label := fmt.Sprintf("%s#%d", k, n)
				v := nemesisDFSValue(label)
				if err := nc.dfsPutCall(t, k, v); err != nil {
					nc.dfs.add(k, label, v)
					nc.dfs.count("put/unknown")
					return true
				}
				nc.dfs.set(k, label, v)
				nc.dfs.count("put/ok")
			case r < 7:
				if out, err := nc.dfsCall(30*time.Second, "rm", k); err != nil {
					if !strings.Contains(out, "OBJECT_NOT_FOUND") {
						nc.dfs.add(k, "", nil)
						nc.dfs.count("rm/unknown")
						return true
					}
				}
				nc.dfs.set(k, "", nil)
				nc.dfs.count("rm/ok")
			default:
				got, absent, err := nc.dfsGetCall(t, k)
				if err != nil {
					nc.dfs.count("get/failed")
					return true
				}
				if err := nc.dfs.check(k, got, absent); err != nil {
					t.Errorf("DFS get during the run: %v", err)
				}
				nc.dfs.count("get/ok")
			}
			return true
		}, nil
	})
}
