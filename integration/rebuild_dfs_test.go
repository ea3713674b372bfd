package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/api"
)

// TestRebuildAdoptsDFSReplicasFromTheRootsRecords is the DFS drill: a
// cluster with a holder and a DFS root holds a LOCAL_DISK key and
// DFS-only keys (one overwritten, one removed before the loss) when its
// master loses its state. `operator rebuild --dfs-root` adopts every
// acknowledged DFS object from the root's range records, byte-identical;
// the removed key does not come back; the overwritten key serves its
// newest value; a put after the rebuild is placed where no adopted range
// is. A dry run lists the DFS replicas; --dfs-drop adopts none of them.
func TestRebuildAdoptsDFSReplicasFromTheRootsRecords(t *testing.T) {
	root, env, c, h := startDFSRebuildCluster(t, 1)
	lib := c.lib()
	ctx, cancel := ctxT(90 * time.Second)
	defer cancel()
	local := randomValue(t, 3000)
	putReplicas(t, c, "local", "a", 1, local)
	want := map[string][]byte{}
	for _, k := range []string{"dfs/a", "dfs/b", "dfs/c", "dfs/gone"} {
		want[k] = randomValue(t, 5000)
		dfsPut(t, c, env, k, want[k])
	}
	want["dfs/a"] = randomValue(t, 7000)
	dfsPut(t, c, env, "dfs/a", want["dfs/a"]) // overwritten: the newest value must come back
	if out, err := dfsCLI(t, c, env, "rm", "dfs/gone"); err != nil {
		t.Fatalf("rm dfs/gone: %v\n%s", err, out)
	}
	delete(want, "dfs/gone")
	waitRemovalRecords(t, openDFSRoot(t, root), 20*time.Second, "dfs/gone")

	c.loseEveryMaster(t)

	base := []string{"operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", h.addr, "--dfs-root", root}
	dry, stdout, _ := rebuildJSON(t, append(base, "--dry-run", "--json")...)
	// 5 put records, the removal of dfs/gone and (once written) that of
	// dfs/a's overwritten incarnation.
	if dry.DFSAdopted != 3 || len(dry.Adopt) != 4 || dry.DFSRecords < 6 || dry.DFSRecords > 7 {
		t.Fatalf("dry run: %+v; want 6 or 7 records, 3 DFS objects and the local one\n%s", dry, stdout)
	}
	for _, a := range dry.Adopt {
		if a.Key != "local" && (len(a.Segments) != 1 || !strings.HasPrefix(a.Segments[0], "dfs:bucket_")) {
			t.Fatalf("dry run adopts %s on %v; want its DFS replica", a.Key, a.Segments)
		}
	}
	if st, err := c.status(c.leader()); err != nil || st.Objects != 0 {
		t.Fatalf("after the dry run: %+v %v; want nothing adopted", st, err)
	}
	rep, stdout, stderr := rebuildJSON(t, append(base, "--json")...)
	if rep.Adopted != 4 || rep.Failed != 0 || rep.DFSAdopted != 3 {
		t.Fatalf("rebuild: %+v\n%s\n%s", rep, stdout, stderr)
	}
	c.waitHolderMounted(t, h)
	if got, err := getAfterMount(ctx, lib, "local"); err != nil || !bytes.Equal(got, local) {
		t.Fatalf("get local after the rebuild: %d bytes, %v", len(got), err)
	}
	requireDFSRebuilt(ctx, t, c, env, want, "dfs/gone")
	cl := c.client(0)
	dfsPut(t, c, env, "dfs/new", value("dfs/new", 20000))
	descs := map[string]api.DFSDescriptor{"dfs/new": dfsDesc(t, cl, "dfs/new")}
	for k := range want {
		descs[k] = dfsDesc(t, cl, k)
	}
	requireNoOverlap(t, descs)
	for k, v := range want {
		if got := dfsGet(t, c, env, k); !bytes.Equal(got, v) {
			t.Fatalf("get %s after a new put: changed", k)
		}
	}
}

// TestRebuildDFSRemovalSurvivesLeaderKill is the DFS removal drill: on a
// three-master cluster with a DFS root, DFS puts and removals are
// interleaved and the leader is killed right after a Remove returns, before
// it may have written that removal's record. The next leader writes the
// queued removal records; then every master loses its state and
// `operator rebuild --dfs-root` adopts from the journal: every
// acknowledged DFS put that was not removed reads back byte-identical and
// no removed key comes back.
func TestRebuildDFSRemovalSurvivesLeaderKill(t *testing.T) {
	root, env, c, h := startDFSRebuildCluster(t, 3)
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

	waitRemovalRecords(t, openDFSRoot(t, root), 30*time.Second, removed...)

	c.loseEveryMaster(t)

	rep, stdout, stderr := rebuildJSON(t, "operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", h.addr, "--dfs-root", root, "--json")
	if rep.Failed != 0 || rep.DFSAdopted != len(want) {
		t.Fatalf("rebuild: %+v; want %d DFS objects\n%s\n%s", rep, len(want), stdout, stderr)
	}
	requireDFSRebuilt(ctx, t, c, env, want, removed...)
}

// startDFSRebuildCluster starts n masters on a DFS root whose journal
// writes are synced, and one holder, h1 in pool a, for the keys a
// rebuild adopts from holders.
func startDFSRebuildCluster(t *testing.T, n int) (root string, env []string, c *cluster, h *holderNode) {
	t.Helper()
	root, env, c = startDFSCluster(t, n, "MOONCAKE_DFS_FSYNC=1")
	return root, env, c, c.startHolder(t, "h1", "a")
}

// requireDFSRebuilt fails unless every key of want reads back through the
// DFS with its acknowledged bytes and every removed key is not found.
func requireDFSRebuilt(ctx context.Context, t *testing.T, c *cluster, env []string, want map[string][]byte, removed ...string) {
	t.Helper()
	for k, v := range want {
		if got := dfsGet(t, c, env, k); !bytes.Equal(got, v) {
			t.Fatalf("get %s after the rebuild: %d bytes, not the acknowledged %d", k, len(got), len(v))
		}
	}
	for _, k := range removed {
		if _, _, err := c.lib().Get(ctx, k); api.CodeOf(err) != api.CodeObjectNotFound {
			t.Fatalf("get %s after the rebuild: %v, want OBJECT_NOT_FOUND (removed before the loss)", k, err)
		}
	}
}
