// Package image builds sexton's container image without a Docker daemon:
// one layer with the static binary, a passwd/group naming the non-root
// user the image runs as, and the data directory owned by that user.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// UID and GID the image runs as: distroless's "nonroot", so volumes and
// securityContexts written for those images fit this one.
const (
	UID      = 65532
	GID      = 65532
	BinPath  = "usr/local/bin/sexton"
	DataPath = "var/lib/sexton"
)

// Options name what goes into the image.
type Options struct {
	Binary  string // a static (CGO_ENABLED=0) sexton binary for linux
	Arch    string // GOARCH of Binary
	Version string // sexton version, for the labels
	Commit  string // git commit, for the labels
	Created time.Time
}

// Build returns the image. The layer's entries carry a fixed mtime
// (Options.Created) so that the same binary gives the same layer digest.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: read the binary: %w", err)
	}
	if err := CheckStatic(o.Binary, bin); err != nil {
		return nil, err
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	layerTar, err := layerBytes(bin, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image: append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = o.Arch
	cf.Created = v1.Time{Time: o.Created}
	cf.Config.Entrypoint = []string{"/" + BinPath}
	cf.Config.Cmd = nil
	cf.Config.User = fmt.Sprintf("%d:%d", UID, GID)
	cf.Config.WorkingDir = "/" + DataPath
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cf.Config.Volumes = map[string]struct{}{"/" + DataPath: {}}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "sexton",
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Commit,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	return img, nil
}

// CheckStatic refuses a binary the image could not run: not an ELF
// executable, or one that needs a dynamic loader or shared libraries (the
// image has neither: build with CGO_ENABLED=0).
func CheckStatic(name string, bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("image: %s is not an ELF executable: %w", name, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("image: %s is dynamically linked (it asks for a program interpreter); build it with CGO_ENABLED=0", name)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("image: %s needs shared libraries %v; build it with CGO_ENABLED=0", name, libs)
	}
	return nil
}

// Write writes img as a tarball `docker load` and `podman load` accept,
// tagged ref (e.g. sexton:v1.2.3).
func Write(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image: tag %q: %w", ref, err)
	}
	return tarball.WriteToFile(path, tag, img)
}

func layerBytes(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(p string, uid, gid int, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: gid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(p string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:sexton:/%s:/sbin/nologin\n", UID, GID, DataPath)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	steps := []func() error{
		func() error { return dir("etc", 0, 0, 0o755) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		// sexton writes nothing to /tmp; it exists for kubectl cp and
		// other tools that expect one.
		func() error { return dir("tmp", 0, 0, 0o1777) },
		func() error { return dir("usr", 0, 0, 0o755) },
		func() error { return dir("usr/local", 0, 0, 0o755) },
		func() error { return dir("usr/local/bin", 0, 0, 0o755) },
		func() error { return file(BinPath, 0o755, bin) },
		func() error { return dir("var", 0, 0, 0o755) },
		func() error { return dir("var/lib", 0, 0, 0o755) },
		func() error { return dir(DataPath, UID, GID, 0o700) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("image: layer tar: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
