package dfsio

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// RootMarkerName is the file that says which cluster a DFS root belongs
// to: {"v":1,"cluster_id":"<16 hex digits>"}, written by the leader at the
// root's first use (tmp, fsync, rename, directory fsync).
const RootMarkerName = ".sexton_dfs_root"

const (
	rootMarkerTmp     = RootMarkerName + ".tmp"
	rootMarkerVersion = 1
	maxRootMarkerSize = 4 << 10
)

// ErrRootUnusable: the DFS root is missing, not a directory, has no
// marker, or is another cluster's. Nothing below it may be trusted: a
// file that is not there says nothing about the cluster's data (an
// unmounted or wrong directory), so no DFS file is judged lost.
var ErrRootUnusable = errors.New("dfsio: DFS root is unusable")

// ErrNoRootMarker: the root is a directory without a marker (it also
// matches ErrRootUnusable).
var ErrNoRootMarker = errors.New("dfsio: DFS root has no marker")

type rootMarker struct {
	V         int    `json:"v"`
	ClusterID string `json:"cluster_id"`
}

func clusterHex(c uint64) string { return fmt.Sprintf("%016x", c) }

// Bind records the cluster this root must belong to; CheckRoot and Exists
// compare the marker with it. Zero accepts any marker.
func (p *Posix) Bind(cluster uint64) { p.cluster.Store(cluster) }

// CheckRoot verifies the root: a directory holding a marker of the bound
// cluster. Every failure wraps ErrRootUnusable and says why.
func (p *Posix) CheckRoot() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrRootUnusable, p.root, fmt.Sprintf(format, args...))
	}
	st, err := os.Stat(p.root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return bad("does not exist (not mounted?)")
	case err != nil:
		return bad("%v", err)
	case !st.IsDir():
		return bad("is not a directory")
	}
	name := filepath.Join(p.root, RootMarkerName)
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w: %s has no %s: not this cluster's DFS root, or not mounted", ErrRootUnusable, ErrNoRootMarker, p.root, RootMarkerName)
	}
	if err != nil {
		return bad("%v", err)
	}
	defer f.Close()
	b := make([]byte, maxRootMarkerSize+1)
	n, _ := f.Read(b)
	var m rootMarker
	if n > maxRootMarkerSize || json.Unmarshal(b[:n], &m) != nil || m.V != rootMarkerVersion || len(m.ClusterID) != 16 {
		return bad("%s is not a version-%d root marker", RootMarkerName, rootMarkerVersion)
	}
	if c := p.cluster.Load(); c != 0 && m.ClusterID != clusterHex(c) {
		return bad("belongs to cluster %s, this is cluster %s", m.ClusterID, clusterHex(c))
	}
	return nil
}

// InitRoot binds the root to cluster and writes its marker if it has
// none. Only the leader calls it, and only while the cluster has no DFS
// file it relies on (first use): later, a missing marker means the root
// is not the one the data lives in, and writing one would hide that.
func (p *Posix) InitRoot(cluster uint64) error {
	if cluster == 0 {
		return fmt.Errorf("%w: %s: the cluster id is not known yet; no marker is written without one", ErrRootUnusable, p.root)
	}
	p.Bind(cluster)
	if err := p.CheckRoot(); err == nil || !errors.Is(err, ErrRootUnusable) {
		return err
	}
	st, err := os.Stat(p.root)
	if err != nil || !st.IsDir() {
		return p.CheckRoot() // missing or not a directory: never created here
	}
	if _, err := os.Stat(filepath.Join(p.root, RootMarkerName)); !errors.Is(err, os.ErrNotExist) {
		return p.CheckRoot() // a marker that is another cluster's or unreadable
	}
	b, err := json.Marshal(rootMarker{V: rootMarkerVersion, ClusterID: clusterHex(cluster)})
	if err != nil {
		return err
	}
	tmp := filepath.Join(p.root, rootMarkerTmp)
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("dfsio: create %s: %w", tmp, err)
	}
	_, werr := unix.Write(fd, b)
	if werr == nil {
		werr = unix.Fsync(fd)
	}
	unix.Close(fd)
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("dfsio: write %s: %w", tmp, werr)
	}
	if err := os.Rename(tmp, filepath.Join(p.root, RootMarkerName)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("dfsio: install %s: %w", RootMarkerName, err)
	}
	if err := syncDir(p.root); err != nil {
		return err
	}
	return p.CheckRoot()
}

// MarkerCluster returns the cluster the root's marker names (zero and
// ErrNoRootMarker when it has none); every other failure wraps
// ErrRootUnusable. It binds nothing.
func (p *Posix) MarkerCluster() (uint64, error) {
	if err := p.CheckRoot(); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(p.root, RootMarkerName))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrRootUnusable, p.root, err)
	}
	var m rootMarker
	if json.Unmarshal(b, &m) != nil {
		return 0, fmt.Errorf("%w: %s: unreadable marker", ErrRootUnusable, p.root)
	}
	var c uint64
	if _, err := fmt.Sscanf(m.ClusterID, "%016x", &c); err != nil {
		return 0, fmt.Errorf("%w: %s: marker cluster id %q: %v", ErrRootUnusable, p.root, m.ClusterID, err)
	}
	return c, nil
}
