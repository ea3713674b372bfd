package holder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"sexton/api"
	"sexton/internal/fsys"
)

const (
	markerVersion = 1
	// maxMarkerSize bounds the marker read from disk.
	maxMarkerSize = 4096
)

// Identity is the content of the marker file: who this directory is.
type Identity struct {
	V         int           `json:"v"`
	SegmentID api.SegmentID `json:"segment_id"`
	ClusterID uint64        `json:"cluster_id"`
	Created   time.Time     `json:"created"`
}

func newIdentity(clusterID uint64) Identity {
	return Identity{
		V:         markerVersion,
		SegmentID: api.SegmentID(uuid.NewString()),
		ClusterID: clusterID,
		Created:   time.Now().UTC().Truncate(time.Second),
	}
}

// readIdentity reads and validates the marker in dir. It fails closed on
// anything it does not fully understand.
func readIdentity(fs fsys.FS, dir string) (Identity, error) {
	name := filepath.Join(dir, MarkerFileName)
	b, err := fsys.ReadFile(fs, name, maxMarkerSize)
	if err != nil {
		return Identity{}, fmt.Errorf("holder: read identity marker: %w", err)
	}
	var probe struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Identity{}, fmt.Errorf("%w: %s does not decode: %v", ErrCorrupt, name, err)
	}
	if probe.V != markerVersion {
		return Identity{}, fmt.Errorf("%w: %s has marker version %d (this build reads %d)", ErrUnknownVersion, name, probe.V, markerVersion)
	}
	var id Identity
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&id); err != nil {
		return Identity{}, fmt.Errorf("%w: %s does not decode: %v", ErrCorrupt, name, err)
	}
	u, err := uuid.Parse(string(id.SegmentID))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %s: segment id %q is not a UUID", ErrCorrupt, name, id.SegmentID)
	}
	// uuid.Parse also takes {…}, urn:uuid:…, upper case and no dashes. The
	// segment id is compared as a string everywhere (the master's registry,
	// task routing), so two spellings of one UUID would be two segments;
	// the holder only ever writes the canonical form, so any other is a
	// hand edit or corruption.
	if u.String() != string(id.SegmentID) {
		return Identity{}, fmt.Errorf("%w: %s: segment id %q is not in the canonical UUID form %q", ErrCorrupt, name, id.SegmentID, u.String())
	}
	return id, nil
}

// writeIdentity persists the marker atomically: tmp, fsync, rename, fsync
// the directory. A crash leaves either no marker or a whole one.
func writeIdentity(fs fsys.FS, dir string, id Identity) error {
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp := filepath.Join(dir, markerTmpName)
	if err := writeFileSynced(fs, syncIdentityTmp, tmp, b); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("holder: write identity marker: %w", err)
	}
	if err := fs.Rename(tmp, filepath.Join(dir, MarkerFileName)); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("holder: install identity marker: %w", err)
	}
	if err := syncIdentityDir.dir(fs, dir); err != nil {
		return fmt.Errorf("holder: fsync directory after marker: %w", err)
	}
	return nil
}

// ignorableForEmptiness are entries that do not make a directory "in use":
// a lock file, or a marker tmp from a crash during first creation.
func ignorableForEmptiness(name string) bool {
	return name == LockFileName || name == markerTmpName
}
