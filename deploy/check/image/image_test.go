package image

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sexton/deploy/check/internal/sextonbin"
)

// TestImage builds a static sexton, the image from it, writes the
// tarball make image writes, reads it back and checks what a container
// runtime would run: the entrypoint, the non-root user, the one layer's
// files and owners, and that the binary taken out of the layer runs
// (sexton version prints: sexton VERSION (commit ...)).
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := sextonbin.Path(t)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	img, err := Build(Options{Binary: bin, Version: "v0.0.0-imagetest", Commit: "abc123", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sexton-image.tar")
	if err := Write(path, "sexton:test", img); err != nil {
		t.Fatal(err)
	}
	got, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("read back the tarball: %v", err)
	}
	cf, err := got.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if e := cf.Config.Entrypoint; len(e) != 1 || e[0] != "/usr/local/bin/sexton" {
		t.Errorf("entrypoint %q, want [/usr/local/bin/sexton]", e)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Config.Labels["org.opencontainers.image.version"] != "v0.0.0-imagetest" || cf.Config.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("os %q labels %v", cf.OS, cf.Config.Labels)
	}
	layers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]*tar.Header{}
	extracted := filepath.Join(dir, "extracted-sexton")
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[strings.TrimSuffix(h.Name, "/")] = h
		if h.Name == BinPath {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if h.Name == "etc/passwd" {
			b, _ := io.ReadAll(tr)
			if !strings.Contains(string(b), ":65532:65532:") {
				t.Errorf("etc/passwd has no user 65532:\n%s", b)
			}
		}
	}
	for _, p := range []string{"etc/passwd", "etc/group", BinPath, DataPath} {
		if seen[p] == nil {
			t.Errorf("layer lacks %s", p)
		}
	}
	if h := seen[DataPath]; h != nil && (h.Uid != UID || h.Gid != GID || h.Typeflag != tar.TypeDir) {
		t.Errorf("%s: uid %d gid %d type %c, want a directory of %d:%d", DataPath, h.Uid, h.Gid, h.Typeflag, UID, GID)
	}
	if h := seen[BinPath]; h != nil && h.Mode&0o111 == 0 {
		t.Errorf("%s mode %o is not executable", BinPath, h.Mode)
	}
	out, err := exec.Command(extracted, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("sexton version from the image: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "sexton ") || !strings.Contains(string(out), "(commit ") {
		t.Errorf("sexton version printed %q", out)
	}
}

// TestBuildRefusesDynamicBinary: the image has no loader and no shared
// libraries, so Build refuses a binary that needs them, and a file that
// is no executable at all.
func TestBuildRefusesDynamicBinary(t *testing.T) {
	dynamic, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no dynamically linked ls to try")
	}
	if _, err := Build(Options{Binary: dynamic}); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("Build(%s) = %v, want a refusal naming CGO_ENABLED=0", dynamic, err)
	}
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(Options{Binary: script}); err == nil || !strings.Contains(err.Error(), "not an ELF executable") {
		t.Errorf("Build(script) = %v, want a refusal: not an ELF executable", err)
	}
}
