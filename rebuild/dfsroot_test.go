package rebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sexton/api"
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

// A rebuild with the lost cluster's DFS root reads its files and its
// journal of range records. A root with files and no journal (a build
// without range records) is refused unless --dfs-drop says the operator
// accepts losing the DFS-only objects; --dfs-drop adopts nothing; a dry
// run reports. The journal's records come with a verifier that reads the
// range back. A missing root, or an unmarked one holding files, is
// refused; an empty unmarked root is nothing to report.
func TestRebuildReadsTheDFSRootsRecords(t *testing.T) {
	files := []string{"bucket_0000000000000001.data", "dfs_shard_03.data"}
	root := dfsRootOf(t, 7, files...)
	rep := &Report{}
	_, err := loadDFSRoot(nil, RunOptions{DFSRoot: root}, rep)
	if err == nil || !strings.Contains(err.Error(), "--dfs-drop") || !strings.Contains(err.Error(), "2 allocator files (8192 bytes) but no range records") {
		t.Fatalf("files without records and no --dfs-drop: %v, want a refusal naming the files and --dfs-drop", err)
	}
	rep = &Report{}
	opt, err := loadDFSRoot(nil, RunOptions{DFSRoot: root, DFSDrop: true}, rep)
	if err != nil || opt != nil || !rep.DFSDropped || len(rep.DFSFiles) != 2 || rep.DFSFiles[1].Bytes != 4096 {
		t.Fatalf("--dfs-drop: %+v %+v %v", opt, rep, err)
	}

	p, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
	if err != nil {
		t.Fatal(err)
	}
	d := api.DFSDescriptor{Allocator: "bucket", Path: files[0], UnitID: 1, Offset: 0, Size: 5, AlignedSize: 4096}
	torn := d // the same range, recorded with other bytes
	if err := p.WriteAt(d, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	inc := api.ObjectIncarnation{High: 7, Low: 3}
	if err := p.AppendPutRecord("k", "", inc, d, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendPutRecord("t", "", inc, torn, []byte("HELLO")); err != nil {
		t.Fatal(err)
	}
	rep = &Report{}
	opt, err = loadDFSRoot(nil, RunOptions{DFSRoot: root, DryRun: true}, rep)
	if err != nil || opt == nil || opt.ClusterID != 7 || len(opt.Records) != 2 || rep.DFSRecords != 2 {
		t.Fatalf("dry run with records: %+v %+v %v", opt, rep, err)
	}
	if !opt.Verify(opt.Records[0]) || opt.Verify(opt.Records[1]) {
		t.Fatal("the verifier must accept the range holding the recorded bytes and refuse the other")
	}

	if _, err := loadDFSRoot(nil, RunOptions{DFSRoot: filepath.Join(root, "absent"), DryRun: true}, &Report{}); err == nil {
		t.Fatal("a missing DFS root was accepted")
	}
	unmarked := dfsRootOf(t, 0, files[0])
	if _, err := loadDFSRoot(nil, RunOptions{DFSRoot: unmarked, DFSDrop: true}, &Report{}); err == nil || !strings.Contains(err.Error(), "no known cluster") {
		t.Fatalf("allocator files below an unmarked root: %v, want a refusal", err)
	}
	rep = &Report{}
	if opt, err := loadDFSRoot(nil, RunOptions{DFSRoot: dfsRootOf(t, 0)}, rep); err != nil || len(rep.DFSFiles) != 0 || opt == nil || len(opt.Records) != 0 {
		t.Fatalf("an empty unmarked root: %+v %v, want nothing to report", rep, err)
	}
	if opt, err := loadDFSRoot(nil, RunOptions{}, rep); err != nil || opt != nil {
		t.Fatalf("no --dfs-root: %v", err)
	}
}
