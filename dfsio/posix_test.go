package dfsio

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

func testFS(t *testing.T, fsync bool) *Posix {
	t.Helper()
	p, err := Open(Settings{Root: t.TempDir(), Adapter: AdapterPosix, Fsync: fsync})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteReadAtDescriptor(t *testing.T) {
	for _, fsync := range []bool{false, true} {
		p := testFS(t, fsync)
		name := dfsalloc.BucketPath(1)
		if err := p.Create(name, 1<<16); err != nil {
			t.Fatal(err)
		}
		if err := p.Create(name, 1<<16); err != nil {
			t.Fatalf("create retry of a file of the right size: %v", err)
		}
		d := api.DFSDescriptor{Allocator: "bucket", Path: name, UnitID: 1, Offset: 8192, Size: 5, AlignedSize: 4096}
		if err := p.WriteAt(d, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		got, err := p.ReadAt(d)
		if err != nil || string(got) != "hello" {
			t.Fatalf("read %q %v", got, err)
		}
		raw, _ := os.ReadFile(filepath.Join(p.Root(), name))
		if len(raw) != 1<<16 || !bytes.Equal(raw[8192:8197], []byte("hello")) || raw[8197] != 0 || raw[8191] != 0 {
			t.Fatal("bytes not at the descriptor's offset, or padding written")
		}
	}
}

func TestRefusesBadPathsRangesAndSizes(t *testing.T) {
	p := testFS(t, false)
	for _, bad := range []string{"../bucket_0000000000000001.data", "x/dfs_shard_00.data", "passwd", ""} {
		if err := p.WriteAt(api.DFSDescriptor{Path: bad, Size: 1, AlignedSize: 4096}, []byte("x")); !errors.Is(err, ErrBadPath) {
			t.Fatalf("path %q: %v", bad, err)
		}
	}
	name := dfsalloc.ShardPath(0, 4)
	if err := p.Create(name, 8192); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteAt(api.DFSDescriptor{Path: name, Size: 3, AlignedSize: 4096}, []byte("toolong")); !errors.Is(err, ErrBadRange) {
		t.Fatalf("value longer than size: %v", err)
	}
	if _, err := p.ReadAt(api.DFSDescriptor{Path: name, Offset: 8000, Size: 4096, AlignedSize: 4096}); !errors.Is(err, ErrShortIO) {
		t.Fatalf("read past the end: %v", err)
	}
	if err := p.Create(name, 4096); !errors.Is(err, ErrFileSize) {
		t.Fatalf("create over a file of another size: %v", err)
	}
	if err := p.Remove(name); err != nil {
		t.Fatal(err)
	}
	if err := p.Remove(name); err != nil {
		t.Fatalf("remove of a missing file: %v", err)
	}
}

func TestSettingsFromEnvAndCompare(t *testing.T) {
	env := map[string]string{EnvRoot: "/mnt/dfs/", "MOONCAKE_DFS_ALLOCATOR": "bucket"}
	get := func(k string) string { return env[k] }
	s, err := SettingsFromEnv(get)
	if err != nil || s.Root != "/mnt/dfs" || s.Adapter != AdapterPosix || s.Alloc.Allocator != "bucket" {
		t.Fatalf("%+v %v", s, err)
	}
	pub := s.Published(s.Alloc)
	if err := s.Compare(pub); err != nil {
		t.Fatalf("same settings: %v", err)
	}
	env["MOONCAKE_DFS_ALIGNMENT"] = "8192"
	c, _ := SettingsFromEnv(get)
	err = c.Compare(pub)
	if api.CodeOf(err) != api.CodeDFSMismatch || !strings.Contains(err.Error(), "MOONCAKE_DFS_ALIGNMENT") {
		t.Fatalf("alignment mismatch: %v", err)
	}
	env[EnvRoot] = "/other"
	c, _ = SettingsFromEnv(get)
	if err := c.Compare(pub); api.CodeOf(err) != api.CodeDFSMismatch || !strings.Contains(err.Error(), EnvRoot) {
		t.Fatalf("root mismatch: %v", err)
	}
	env[EnvAdapter] = AdapterHF3FS
	if _, err := SettingsFromEnv(get); !errors.Is(err, ErrAdapterNotBuilt) || !strings.Contains(err.Error(), "hf3fs is not built into sexton; use posix") {
		t.Fatalf("hf3fs: %v", err)
	}
	if s, err := SettingsFromEnv(func(string) string { return "" }); err != nil || s.Enabled() {
		t.Fatalf("no root: %+v %v", s, err)
	}
}
