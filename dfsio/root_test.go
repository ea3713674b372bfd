package dfsio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sexton/fsm/dfsalloc"
)

func openAt(t *testing.T, root string) *Posix {
	t.Helper()
	p, err := Open(Settings{Root: root, Adapter: AdapterPosix})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wantUnusable(t *testing.T, p *Posix, what string) {
	t.Helper()
	if err := p.CheckRoot(); !errors.Is(err, ErrRootUnusable) {
		t.Fatalf("%s: CheckRoot %v, want ErrRootUnusable", what, err)
	}
	exists, err := p.Exists(dfsalloc.BucketPath(1))
	if !errors.Is(err, ErrRootUnusable) {
		t.Fatalf("%s: Exists = %v, %v; a file under an unusable root must be an error, not absent", what, exists, err)
	}
}

// A root that is missing, not a directory, unmarked, or another
// cluster's is unusable: Exists says so with an error instead of "absent",
// and InitRoot does not paper over it.
func TestRootChecks(t *testing.T) {
	const cluster, other = 0xC1, 0xC2
	t.Run("missing", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "not-mounted")
		p := openAt(t, root)
		p.Bind(cluster)
		wantUnusable(t, p, "missing root")
		if err := p.InitRoot(cluster); !errors.Is(err, ErrRootUnusable) {
			t.Fatalf("InitRoot on a missing root: %v", err)
		}
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("InitRoot created the missing root")
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(root, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := openAt(t, root)
		wantUnusable(t, p, "root is a file")
		if err := p.InitRoot(cluster); !errors.Is(err, ErrRootUnusable) {
			t.Fatalf("InitRoot on a file: %v", err)
		}
	})
	t.Run("unmarked", func(t *testing.T) {
		root := t.TempDir()
		p := openAt(t, root) // e.g. the empty mount point of an unmounted DFS
		p.Bind(cluster)
		wantUnusable(t, p, "unmarked root")
		if err := p.InitRoot(0); !errors.Is(err, ErrRootUnusable) {
			t.Fatalf("InitRoot without a cluster id: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root, RootMarkerName)); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a marker was written without a cluster id")
		}
	})
	t.Run("first use, then another cluster", func(t *testing.T) {
		root := t.TempDir()
		p := openAt(t, root)
		if err := p.InitRoot(cluster); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, rootMarkerTmp)); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("marker tmp left behind")
		}
		name := dfsalloc.BucketPath(1)
		if exists, err := p.Exists(name); exists || err != nil {
			t.Fatalf("absent file under a good root: %v, %v; want false, nil", exists, err)
		}
		if err := p.Create(name, 4096); err != nil {
			t.Fatal(err)
		}
		if exists, err := p.Exists(name); !exists || err != nil {
			t.Fatalf("present file: %v, %v", exists, err)
		}
		// A second node of the same cluster sees it as usable.
		q := openAt(t, root)
		q.Bind(cluster)
		if err := q.CheckRoot(); err != nil {
			t.Fatal(err)
		}
		// Another cluster's node: unusable, and InitRoot does not take it over.
		r := openAt(t, root)
		r.Bind(other)
		wantUnusable(t, r, "another cluster's root")
		if err := r.InitRoot(other); !errors.Is(err, ErrRootUnusable) {
			t.Fatalf("InitRoot over another cluster's marker: %v", err)
		}
		if err := q.CheckRoot(); err != nil {
			t.Fatalf("the owner's marker changed: %v", err)
		}
		// Unmounted later (marker gone): unusable again.
		if err := os.Remove(filepath.Join(root, RootMarkerName)); err != nil {
			t.Fatal(err)
		}
		wantUnusable(t, q, "marker vanished")
	})
	t.Run("corrupt marker", func(t *testing.T) {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, RootMarkerName), []byte("{not json"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := openAt(t, root)
		wantUnusable(t, p, "corrupt marker")
		if err := p.InitRoot(cluster); !errors.Is(err, ErrRootUnusable) {
			t.Fatalf("InitRoot over a corrupt marker: %v", err)
		}
	})
}
