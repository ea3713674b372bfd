package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
)

// TestRebuildReportsDFSFilesItCannotAdopt: a cluster with a DFS root holds
// a LOCAL_DISK key and a DFS-only key when its master loses its state.
// The DFS root records no key, incarnation or removal for the bytes in its
// files, so `operator rebuild --dfs-root` cannot adopt the DFS-only key: it
// lists the root's files, refuses to change anything without --dfs-drop,
// and with it adopts the LOCAL_DISK key alone (the DFS-only one is
// reported lost, OBJECT_NOT_FOUND).
func TestRebuildReportsDFSFilesItCannotAdopt(t *testing.T) {
	root := t.TempDir() + "/dfs"
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	env := dfsEnv(root)
	c := startClusterEnv(t, 1, env)
	h := c.startHolder(t, "h1", "a")
	lib := c.lib()
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	local := randomValue(t, 3000)
	if _, err := lib.Put(ctx, "local", local, client.PutOptions{Pool: "a", Replicas: 1}); err != nil {
		t.Fatalf("put local: %v", err)
	}
	dfsPut(t, c, env, "dfs/only", value("dfs/only", 5000))
	files, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dataFiles []string
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".data") {
			dataFiles = append(dataFiles, f.Name())
		}
	}
	if len(dataFiles) == 0 {
		t.Fatalf("no DFS data file below %s: %v", root, files)
	}

	m := c.nodes[0]
	m.kill()
	if err := os.RemoveAll(m.dir); err != nil {
		t.Fatal(err)
	}
	m.proc.start()
	c.waitLeader(30 * time.Second)

	base := []string{"operator", "rebuild", "--masters", strings.Join(c.addrs(), ","), "--holders", h.addr, "--dfs-root", root}
	out, err := runCLIErr(base...)
	if err == nil || !strings.Contains(out, "--dfs-drop") || !strings.Contains(out, "no key, incarnation or removal") {
		t.Fatalf("rebuild of a cluster with DFS files, without --dfs-drop: %v, want a refusal naming --dfs-drop\n%s", err, out)
	}
	if st, err := c.status(c.leader()); err != nil || st.Objects != 0 {
		t.Fatalf("after the refused rebuild: %+v %v; want nothing adopted", st, err)
	}
	var dry struct {
		DFSRoot  string `json:"dfs_root"`
		DFSFiles []struct {
			Path  string `json:"path"`
			Bytes int64  `json:"bytes"`
		} `json:"dfs_files"`
		Keys int `json:"keys"`
	}
	stdout, stderr := runRebuildCLI(t, append(base, "--dry-run", "--json")...)
	if err := json.Unmarshal(stdout, &dry); err != nil {
		t.Fatalf("dry run output: %v\n%s\n%s", err, stdout, stderr)
	}
	if dry.DFSRoot != root || len(dry.DFSFiles) != len(dataFiles) || dry.DFSFiles[0].Path != dataFiles[0] || dry.Keys != 1 {
		t.Fatalf("dry run: %+v; want the files %v and one key\n%s", dry, dataFiles, stdout)
	}
	stdout, stderr = runRebuildCLI(t, append(base, "--dfs-drop", "--json")...)
	var rep struct {
		Adopted int `json:"adopted"`
		Failed  int `json:"failed"`
	}
	if err := json.Unmarshal(stdout, &rep); err != nil || rep.Adopted != 1 || rep.Failed != 0 {
		t.Fatalf("rebuild with --dfs-drop: %+v %v\n%s\n%s", rep, err, stdout, stderr)
	}
	c.waitHolderMounted(t, h)
	if got, err := getAfterMount(ctx, lib, "local"); err != nil || !bytes.Equal(got, local) {
		t.Fatalf("get local after the rebuild: %d bytes, %v", len(got), err)
	}
	if _, _, err := lib.Get(ctx, "dfs/only"); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("get dfs/only after the rebuild: %v, want OBJECT_NOT_FOUND (not adoptable)", err)
	}
}
