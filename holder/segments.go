package holder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sexton/api"
	"sexton/internal/fsys"
)

// The segment ids of its cluster a holder learned from the master
// (HeartbeatResponse.Segments). A rebuild after every master lost its
// state reads them from the holders it scans (HolderListRecords) and
// refuses to go on while one of them is neither scanned nor named as
// missing: a holder the operator forgot would otherwise mount the rebuilt
// cluster later and reconcile away every copy only it holds.
const (
	KnownSegmentsFileName = ".cluster_segments"
	knownSegmentsTmpName  = KnownSegmentsFileName + ".tmp"
	knownSegmentsVersion  = 1
	// maxKnownSegmentsFile bounds the file read from disk: 4096 segments
	// (a RebuildBegin's bound) of 36-byte UUIDs are about 160 KiB.
	maxKnownSegmentsFile = 1 << 20
)

// knownSegments is the file's content.
type knownSegments struct {
	V         int             `json:"v"`
	ClusterID uint64          `json:"cluster_id"`
	Segments  []api.SegmentID `json:"segments"`
}

// readKnownSegments reads the file in dir; a directory without one has
// none (an older build, or no heartbeat yet). Anything it does not fully
// understand is ErrCorrupt.
func readKnownSegments(fs fsys.FS, dir string) (knownSegments, error) {
	name := filepath.Join(dir, KnownSegmentsFileName)
	b, err := fsys.ReadFile(fs, name, maxKnownSegmentsFile)
	if errors.Is(err, os.ErrNotExist) {
		return knownSegments{}, nil
	}
	if err != nil {
		return knownSegments{}, fmt.Errorf("holder: read %s: %w", name, err)
	}
	var k knownSegments
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return knownSegments{}, fmt.Errorf("%w: %s does not decode: %v", ErrCorrupt, name, err)
	}
	if k.V != knownSegmentsVersion {
		return knownSegments{}, fmt.Errorf("%w: %s has version %d (this build reads %d)", ErrUnknownVersion, name, k.V, knownSegmentsVersion)
	}
	if k.ClusterID == 0 || len(k.Segments) > api.MaxRebuildSegmentsKnown {
		return knownSegments{}, fmt.Errorf("%w: %s names cluster %016x and %d segments", ErrCorrupt, name, k.ClusterID, len(k.Segments))
	}
	return k, nil
}

// writeKnownSegments persists the file atomically: tmp, fsync, rename,
// fsync the directory, as the identity marker is.
func writeKnownSegments(fs fsys.FS, dir string, k knownSegments) error {
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, knownSegmentsTmpName)
	if err := writeFileSynced(fs, syncKnownSegmentsTmp, tmp, append(b, '\n')); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("holder: write %s: %w", KnownSegmentsFileName, err)
	}
	if err := fs.Rename(tmp, filepath.Join(dir, KnownSegmentsFileName)); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("holder: install %s: %w", KnownSegmentsFileName, err)
	}
	if err := syncKnownSegmentsDir.dir(fs, dir); err != nil {
		return fmt.Errorf("holder: fsync directory after %s: %w", KnownSegmentsFileName, err)
	}
	return nil
}

// KnownSegments returns the segment ids of its cluster this holder last
// recorded (nil: none recorded).
func (s *Store) KnownSegments() []api.SegmentID {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known.ClusterID == 0 || s.known.ClusterID != s.id.ClusterID {
		return nil
	}
	return slices.Clone(s.known.Segments)
}

// KnownSegmentsDigest is api.SegmentSetDigest of KnownSegments, zero when
// none are recorded.
func (s *Store) KnownSegmentsDigest() uint64 {
	ids := s.KnownSegments()
	if ids == nil {
		return 0
	}
	return api.SegmentSetDigest(ids)
}

// SetKnownSegments durably records the segment ids of cluster the master
// sent. It refuses a cluster the marker does not name (the holder follows
// only its own cluster) and changes nothing on failure.
func (s *Store) SetKnownSegments(cluster uint64, ids []api.SegmentID) error {
	if len(ids) > api.MaxRebuildSegmentsKnown {
		return fmt.Errorf("%w: %d segment ids exceed %d", ErrBadOptions, len(ids), api.MaxRebuildSegmentsKnown)
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if cluster == 0 || cluster != s.id.ClusterID {
		return fmt.Errorf("%w: segments of cluster %016x, the marker names %016x", ErrClusterMismatch, cluster, s.id.ClusterID)
	}
	if s.known.ClusterID == cluster && slices.Equal(s.known.Segments, sorted) {
		return nil
	}
	next := knownSegments{V: knownSegmentsVersion, ClusterID: cluster, Segments: sorted}
	if err := writeKnownSegments(s.fs, s.dir, next); err != nil {
		return err
	}
	s.known = next
	return nil
}
