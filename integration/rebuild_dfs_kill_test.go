package integration

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/internal/testutil"
)

// TestRebuildDFSRemovalSurvivesLeaderKill is the DFS removal drill: on a
// three-master cluster with a DFS root, DFS puts and removals are
// interleaved and the leader is killed right after a Remove returns, before
// it may have written that removal's record. The next leader writes the
// queued removal records; then every master loses its state and
// `operator rebuild --dfs-root` adopts from the journal: every
// acknowledged DFS put that was not removed reads back byte-identical and
// no removed key comes back.
func TestRebuildDFSRemovalSurvivesLeaderKill(t *testing.T) {
	root, env, c := startDFSCluster(t, 3, "MOONCAKE_DFS_FSYNC=1")
	h := c.startHolder(t, "h1", "a")
	lib := c.lib()
	ctx, cancel := ctxT(120 * time.Second)
	defer cancel()
	want := map[string][]byte{}
	var removed []string
	for i := range 8 {
		k := fmt.Sprintf("dfs/k%d", i)
		want[k] = randomValue(t, 2000+300*i)
		dfsPut(t, c, env, k, want[k])
	}
	want["dfs/k1"] = randomValue(t, 6000)
	dfsPut(t, c, env, "dfs/k1", want["dfs/k1"]) // overwritten
	for _, k := range []string{"dfs/k2", "dfs/k5"} {
		if out, err := dfsCLI(t, c, env, "rm", k); err != nil {
			t.Fatalf("rm %s: %v\n%s", k, err, out)
		}
		delete(want, k)
		removed = append(removed, k)
	}
	// The last removal: the leader dies the moment its Remove returns.
	old := c.leader()
	if out, err := dfsCLI(t, c, env, "rm", "dfs/k7"); err != nil {
		t.Fatalf("rm dfs/k7: %v\n%s", err, out)
	}
	old.kill()
	delete(want, "dfs/k7")
	removed = append(removed, "dfs/k7")
	c.waitLeader(30 * time.Second)

	fs, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		recs, _, err := fs.ScanRecords()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if r.Op == dfsio.RecordRemoved && r.Through {
				seen[r.Key] = true
			}
		}
		for _, k := range removed {
			if !seen[k] {
				return false
			}
		}
		return true
	}, "the removal records of every removed key")

	c.loseEveryMaster(t)

	rep, stdout, stderr := rebuildJSON(t, "operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", h.addr, "--dfs-root", root, "--json")
	if rep.Failed != 0 || rep.DFSAdopted != len(want) {
		t.Fatalf("rebuild: %+v; want %d DFS objects\n%s\n%s", rep, len(want), stdout, stderr)
	}
	for k, v := range want {
		if got := dfsGet(t, c, env, k); !bytes.Equal(got, v) {
			t.Fatalf("get %s after the rebuild: %d bytes, not the acknowledged %d", k, len(got), len(v))
		}
	}
	for _, k := range removed {
		if _, _, err := lib.Get(ctx, k); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("get %s after the rebuild: %v, want OBJECT_NOT_FOUND (removed before the loss)", k, err)
		}
	}
}
