package master

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sexton/dfsio"
	"sexton/fsm/dfsalloc"
)

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
