package master

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
)

// The leader's missing-file decision (fault 6): under a usable root a
// ready unit whose file is gone is lost; under a root that is missing,
// unmarked (an unmounted mount point) or another cluster's, nothing is.
func TestDFSLostUnitsNeedAUsableRoot(t *testing.T) {
	const cluster = 0xC1
	units := []dfsalloc.UnitStats{
		{Unit: 1, Path: dfsalloc.BucketPath(1), State: dfsalloc.UnitSealed, File: dfsalloc.FileReady},
		{Unit: 2, Path: dfsalloc.BucketPath(2), State: dfsalloc.UnitOpen, File: dfsalloc.FileReady},
		{Unit: 3, Path: dfsalloc.BucketPath(3), State: dfsalloc.UnitOpen, File: dfsalloc.FileNeeded},
	}
	open := func(root string, c uint64) *dfsio.Posix {
		t.Helper()
		p, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
		if err != nil {
			t.Fatal(err)
		}
		p.Bind(c)
		return p
	}
	good := t.TempDir()
	p := open(good, cluster)
	if err := p.InitRoot(cluster); err != nil {
		t.Fatal(err)
	}
	if err := p.Create(units[0].Path, 4096); err != nil {
		t.Fatal(err)
	}
	lost, err := dfsLostUnits(units, p.Exists)
	if err != nil || len(lost) != 1 || lost[0].Unit != 2 {
		t.Fatalf("good root: lost %v, %v; want unit 2 only", lost, err)
	}

	for name, p := range map[string]*dfsio.Posix{
		"missing":         open(filepath.Join(t.TempDir(), "gone"), cluster),
		"unmarked":        open(t.TempDir(), cluster),
		"another cluster": open(good, 0xC2),
	} {
		lost, err := dfsLostUnits(units, p.Exists)
		if len(lost) != 0 || !errors.Is(err, dfsio.ErrRootUnusable) {
			t.Fatalf("%s root: lost %v, %v; want nothing lost and ErrRootUnusable", name, lost, err)
		}
	}
	if err := os.Remove(filepath.Join(good, dfsio.RootMarkerName)); err != nil {
		t.Fatal(err)
	}
	if lost, err := dfsLostUnits(units, p.Exists); len(lost) != 0 || err == nil {
		t.Fatalf("root whose marker vanished: lost %v, %v", lost, err)
	}
}

// The leader writes the root's marker only at first use (no DFS file the
// state relies on yet) or to adopt a root from before markers that holds
// every file the state relies on; an empty directory (an unmounted mount
// point) under a cluster with DFS data stays unusable and unmarked.
func TestDFSRootMarkedOnlyAtFirstUse(t *testing.T) {
	const cluster = 0xC1
	ready := []dfsalloc.UnitStats{{Unit: 1, Path: dfsalloc.BucketPath(1), State: dfsalloc.UnitSealed, File: dfsalloc.FileReady}}
	open := func(root string) *dfsio.Posix {
		t.Helper()
		p, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	marked := func(root string) bool {
		_, err := os.Stat(filepath.Join(root, dfsio.RootMarkerName))
		return err == nil
	}

	first := t.TempDir()
	if adopted, err := checkDFSRoot(open(first), cluster, nil); err != nil || adopted || !marked(first) {
		t.Fatalf("first use: adopted %v, err %v, marked %v", adopted, err, marked(first))
	}

	unmounted := t.TempDir()
	if _, err := checkDFSRoot(open(unmounted), cluster, ready); !errors.Is(err, dfsio.ErrRootUnusable) || marked(unmounted) {
		t.Fatalf("empty root under a cluster with DFS data: %v, marked %v", err, marked(unmounted))
	}

	old := t.TempDir()
	if err := open(old).Create(ready[0].Path, 4096); err != nil {
		t.Fatal(err)
	}
	if adopted, err := checkDFSRoot(open(old), cluster, ready); err != nil || !adopted || !marked(old) {
		t.Fatalf("pre-marker root with every file: adopted %v, err %v", adopted, err)
	}
	if _, err := checkDFSRoot(open(old), 0xC2, ready); !errors.Is(err, dfsio.ErrRootUnusable) {
		t.Fatalf("another cluster's leader on a marked root: %v", err)
	}
}
