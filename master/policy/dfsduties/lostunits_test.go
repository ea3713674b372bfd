package dfsduties

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
	lost, err := LostUnits(units, p.Exists)
	if err != nil || len(lost) != 1 || lost[0].Unit != 2 {
		t.Fatalf("good root: lost %v, %v; want unit 2 only", lost, err)
	}

	for name, p := range map[string]*dfsio.Posix{
		"missing":         open(filepath.Join(t.TempDir(), "gone"), cluster),
		"unmarked":        open(t.TempDir(), cluster),
		"another cluster": open(good, 0xC2),
	} {
		lost, err := LostUnits(units, p.Exists)
		if len(lost) != 0 || !errors.Is(err, dfsio.ErrRootUnusable) {
			t.Fatalf("%s root: lost %v, %v; want nothing lost and ErrRootUnusable", name, lost, err)
		}
	}
	if err := os.Remove(filepath.Join(good, dfsio.RootMarkerName)); err != nil {
		t.Fatal(err)
	}
	if lost, err := LostUnits(units, p.Exists); len(lost) != 0 || err == nil {
		t.Fatalf("root whose marker vanished: lost %v, %v", lost, err)
	}
}
