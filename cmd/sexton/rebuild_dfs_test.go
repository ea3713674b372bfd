package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sexton/dfsio"
)

// dfsRootOf makes a DFS root marked for cluster holding the named
// allocator files of 4096 bytes.
func dfsRootOf(t *testing.T, cluster uint64, files ...string) string {
	t.Helper()
	root := t.TempDir()
	p, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
	if err != nil {
		t.Fatal(err)
	}
	if cluster != 0 {
		if err := p.InitRoot(cluster); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A rebuild with the lost cluster's DFS root reports its allocator files
// and refuses to go on (nothing changed) unless --dfs-drop says the
// operator accepts losing the DFS-only objects: the root records no key,
// incarnation or removal for their bytes. A dry run reports without
// refusing; a root of another cluster, or a missing one, is refused; an
// empty unmarked root is nothing to report.
func TestRebuildReportsAndRefusesUnadoptableDFSFiles(t *testing.T) {
	files := []string{"bucket_0000000000000001.data", "dfs_shard_03.data"}
	root := dfsRootOf(t, 7, files...)
	rep := &rebuildReport{}
	err := checkRebuildDFS(rebuildOptions{dfsRoot: root}, 7, rep)
	if err == nil || !strings.Contains(err.Error(), "--dfs-drop") || !strings.Contains(err.Error(), "2 allocator files (8192 bytes)") {
		t.Fatalf("rebuild with DFS files and no --dfs-drop: %v, want a refusal naming the files and --dfs-drop", err)
	}
	for _, o := range []rebuildOptions{{dfsRoot: root, dfsDrop: true}, {dfsRoot: root, dryRun: true}} {
		rep := &rebuildReport{}
		if err := checkRebuildDFS(o, 7, rep); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if rep.DFSRoot != root || len(rep.DFSFiles) != 2 || rep.DFSFiles[0].Path != files[0] || rep.DFSFiles[1].Bytes != 4096 {
			t.Fatalf("%+v: report %+v", o, rep)
		}
	}
	if err := checkRebuildDFS(rebuildOptions{dfsRoot: root, dfsDrop: true}, 8, &rebuildReport{}); err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Fatalf("another cluster's DFS root: %v, want a refusal", err)
	}
	if err := checkRebuildDFS(rebuildOptions{dfsRoot: filepath.Join(root, "absent"), dfsDrop: true}, 7, &rebuildReport{}); err == nil {
		t.Fatal("a missing DFS root was accepted")
	}
	unmarked := dfsRootOf(t, 0, files[0])
	if err := checkRebuildDFS(rebuildOptions{dfsRoot: unmarked, dfsDrop: true}, 7, &rebuildReport{}); err == nil || !strings.Contains(err.Error(), "no known cluster") {
		t.Fatalf("allocator files below an unmarked root: %v, want a refusal", err)
	}
	rep = &rebuildReport{}
	if err := checkRebuildDFS(rebuildOptions{dfsRoot: dfsRootOf(t, 0)}, 7, rep); err != nil || len(rep.DFSFiles) != 0 {
		t.Fatalf("an empty unmarked root: %+v %v, want nothing to report", rep, err)
	}
	if err := checkRebuildDFS(rebuildOptions{}, 7, rep); err != nil {
		t.Fatalf("no --dfs-root: %v", err)
	}
}
