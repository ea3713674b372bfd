package holder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sexton/internal/enum"
	"sexton/internal/fsys"
	"sexton/internal/msgpackscan"
)

// gcIntentVersion is the only .bucket_gc_intent version this build reads
// and writes.
const gcIntentVersion = 1

// maxGCIntentFileSize bounds the intent read from disk; a full intent
// (8 sources) is under 200 bytes.
const maxGCIntentFileSize = 4 << 10

// maxGCSources is the most source buckets one round merges (docs/DESIGN.md §6).
const maxGCSources = 8

const gcIntentTmpName = GCIntentFileName + ".tmp"

// gcState is the phase a round's intent records.
type gcState uint8

const (
	// gcPrepared: the sources are authoritative; the target, if any, is
	// being written and is discarded by recovery.
	gcPrepared gcState = 1
	// gcCommitted: the target (if any) is authoritative; the sources are
	// garbage, removed by cleanup or recovery.
	gcCommitted gcState = 2
)

var gcStateNames = []string{gcPrepared: "PREPARED", gcCommitted: "COMMITTED"}

func (st gcState) String() string {
	if s := enum.Name(gcStateNames, st, ""); s != "" {
		return s
	}
	return fmt.Sprintf("state(%d)", uint8(st))
}

// gcIntent is the content of .bucket_gc_intent. Target 0 means the round
// has no replacement (fully dead sources are unlinked). Checksum must stay
// the last field (see sealChecksum).
type gcIntent struct {
	V        uint32   `msgpack:"v"`
	State    gcState  `msgpack:"state"`
	Sources  []uint64 `msgpack:"sources"`
	Target   uint64   `msgpack:"target"`
	Checksum uint32   `msgpack:"checksum"`
}

func (in *gcIntent) String() string {
	return fmt.Sprintf("%s sources %v target %d", in.State, in.Sources, in.Target)
}

func encodeGCIntent(in *gcIntent) ([]byte, error) {
	c := *in
	c.V = gcIntentVersion
	c.Checksum = 0
	return sealChecksum(&c)
}

// decodeGCIntent verifies and decodes the intent: size, checksum over the
// raw bytes, version, state, then the ids (1..8 distinct non-zero sources,
// a target that is none of them).
func decodeGCIntent(name string, b []byte) (*gcIntent, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: %s: %s", ErrGCIntentPending, ErrCorrupt, name, fmt.Sprintf(format, args...))
	}
	var in gcIntent
	if err := decodeChecked(b, "a GC intent", maxGCIntentFileSize, msgpackscan.Limits{MaxItems: 64}, &in); err != nil {
		return nil, bad("%v", err)
	}
	if in.V != gcIntentVersion {
		return nil, fmt.Errorf("%w: %w: %s: GC intent version %d (this build reads %d)", ErrGCIntentPending, ErrUnknownVersion, name, in.V, gcIntentVersion)
	}
	if in.State != gcPrepared && in.State != gcCommitted {
		return nil, bad("unknown state %d", in.State)
	}
	if len(in.Sources) == 0 || len(in.Sources) > maxGCSources {
		return nil, bad("%d sources (want 1..%d)", len(in.Sources), maxGCSources)
	}
	seen := make(map[uint64]bool, len(in.Sources))
	for _, id := range in.Sources {
		if id == 0 || seen[id] || id == in.Target {
			return nil, bad("bad source list %v with target %d", in.Sources, in.Target)
		}
		seen[id] = true
	}
	if in.State == gcPrepared && in.Target == 0 {
		return nil, bad("PREPARED without a target")
	}
	return &in, nil
}

// readGCIntent reads the intent of dir; (nil, nil) when there is none.
func readGCIntent(fs fsys.FS, dir string) (*gcIntent, error) {
	name := filepath.Join(dir, GCIntentFileName)
	b, err := fsys.ReadFile(fs, name, maxGCIntentFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrGCIntentPending, name, err)
	}
	return decodeGCIntent(name, b)
}

// writeGCIntent installs in atomically: tmp → fsync → rename → dir fsync.
// afterTmp is hit between the tmp's fsync and the rename. renamed reports
// whether the new intent replaced the old one (so after a failed directory
// fsync it may be what a restart finds).
func (s *Store) writeGCIntent(in *gcIntent, afterTmp interface{ Hit() }) (renamed bool, err error) {
	tmpSync, dirSync := syncGCIntentPreparedTmp, syncGCIntentPreparedDir
	if in.State == gcCommitted {
		tmpSync, dirSync = syncGCIntentCommittedTmp, syncGCIntentCommittedDir
	}
	data, err := encodeGCIntent(in)
	if err != nil {
		return false, fmt.Errorf("holder: encode GC intent: %w", err)
	}
	tmp, final := s.path(gcIntentTmpName), s.path(GCIntentFileName)
	if err := writeFileSynced(s.fs, tmpSync, tmp, data); err != nil {
		_ = s.fs.Remove(tmp)
		return false, fmt.Errorf("holder: write %s: %w", tmp, err)
	}
	afterTmp.Hit()
	if err := s.fs.Rename(tmp, final); err != nil {
		_ = s.fs.Remove(tmp)
		return false, fmt.Errorf("holder: rename %s over %s: %w", tmp, final, err)
	}
	if err := dirSync.dir(s.fs, s.dir); err != nil {
		return true, fmt.Errorf("holder: fsync directory %s after installing %s: %w", s.dir, final, err)
	}
	return true, nil
}

// writeGCIntentSpace is writeGCIntent that, when the write meets a full
// disk before its rename, releases the space reserve and writes again.
func (s *Store) writeGCIntentSpace(in *gcIntent, afterTmp interface{ Hit() }) (bool, error) {
	renamed, err := s.writeGCIntent(in, afterTmp)
	if err != nil && !renamed && s.retryAfterNoSpace(spacePathGCIntent, err) {
		renamed, err = s.writeGCIntent(in, afterTmp)
	}
	return renamed, err
}

// removeGCIntent ends a round. The removal is not fsynced on its own: a
// crash that brings the intent back only repeats a finished cleanup
// (every step is idempotent), and the next round's intent install fsyncs
// the directory anyway.
func (s *Store) removeGCIntent() error {
	if err := s.fs.Remove(s.path(GCIntentFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("holder: remove %s: %w", s.path(GCIntentFileName), err)
	}
	return nil
}
