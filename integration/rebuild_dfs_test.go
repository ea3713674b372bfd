package integration

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/dfsio"
	"sexton/internal/testutil"
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
	root, env, c := startDFSCluster(t, 1, "MOONCAKE_DFS_FSYNC=1")
	h := c.startHolder(t, "h1", "a")
	lib := c.lib()
	ctx, cancel := ctxT(90 * time.Second)
	defer cancel()
	local := randomValue(t, 3000)
	if _, err := lib.Put(ctx, "local", local, client.PutOptions{Pool: "a", Replicas: 1}); err != nil {
		t.Fatalf("put local: %v", err)
	}
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
	fs, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, func() bool {
		recs, _, err := fs.ScanRecords()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Op == dfsio.RecordRemoved && r.Key == "dfs/gone" {
				return true
			}
		}
		return false
	}, "the removal record of dfs/gone")

	m := c.nodes[0]
	m.kill()
	if err := os.RemoveAll(m.dir); err != nil {
		t.Fatal(err)
	}
	m.proc.start()
	c.waitLeader(30 * time.Second)

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
	for k, v := range want {
		if got := dfsGet(t, c, env, k); !bytes.Equal(got, v) {
			t.Fatalf("get %s after the rebuild: %d bytes, not the acknowledged %d", k, len(got), len(v))
		}
	}
	if _, _, err := lib.Get(ctx, "dfs/gone"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get dfs/gone after the rebuild: %v, want OBJECT_NOT_FOUND (removed before the loss)", err)
	}
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
