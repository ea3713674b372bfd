package raftio

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"sexton/internal/fsys"
)

// SnapshotStore is the master's raft.SnapshotStore, in place of
// hashicorp/raft's FileSnapshotStore (DESIGN.md, "The snapshot
// store"). A snapshot is two flat files in <data-dir>/snapshots/:
// <id>.state, the fsm's snapshot stream as Persist wrote it, and
// <id>.meta, the JSON of its raft.SnapshotMeta with the state's size and
// how the state is checked, under a CRC-32C of its own. The id is
// <term>-<index>-<msec>, as hashicorp names them. A snapshot exists iff its
// .meta exists: the .meta is renamed into place last, after the .state,
// and both are fsynced before and the directory after.
//
// The state carries no checksum of the store's: it is the snapshot
// package's stream, whose chunks and trailer carry CRC-32C that the fsm's
// Restore checks as it reads (all or nothing, trailing bytes refused), so
// Open returns it after checking only its size. A data dir written by
// hashicorp's store (snapshots/<id>/meta.json and state.bin, a CRC-64 in
// meta.json) is still read: its snapshots are listed with the new ones,
// opened after their CRC-64 is verified as hashicorp did, and reaped like
// them.
type SnapshotStore struct {
	fs     fsys.FS
	dir    string
	retain int
	log    hclog.Logger
	bufLen int // of the sink's writer and Open's reader
	// writeBehind is the sink's chunk of write-behind (writeBehind; 0:
	// none).
	writeBehind int64

	// mu serializes commits and reaping, and guards creating: the ids of
	// the sinks not yet closed, so two snapshots started in the same
	// millisecond at the same term and index get different ids.
	mu       sync.Mutex
	creating map[string]bool

	// skipSync, set only by this package's tests, leaves out the fsync of
	// the named sync sites (snapSyncSites), to show that each one matters.
	skipSync func(site string) bool
}

var _ raft.SnapshotStore = (*SnapshotStore)(nil)

const (
	snapDirName     = "snapshots"
	snapStateSuffix = ".state"
	snapMetaSuffix  = ".meta"
	snapTmpSuffix   = ".tmp"
	// hashicorp/raft's FileSnapshotStore layout: a directory per snapshot.
	legacyMetaName  = "meta.json"
	legacyStateName = "state.bin"

	// snapMetaLimit bounds a .meta (or legacy meta.json) read: a few
	// hundred bytes plus the configuration's servers.
	snapMetaLimit = 1 << 20
	// snapBufLen is the sink's write buffer and Open's read buffer.
	snapBufLen = 1 << 20

	// StateCheckStream names how a snapshot's state is checked: by the
	// CRC-32C frames and trailer of sexton's own snapshot stream, as the
	// fsm reads it. A .meta naming anything else is refused.
	StateCheckStream = "sexton-stream-crc32c"
)

// The sync sites: every fsync the store issues has one of these names
// (DESIGN.md lists what each protects and the test that fails
// without it).
const (
	syncOpenParentDir  = "open.parent-dir"  // data dir, after creating snapshots/
	syncOpenCleanupDir = "open.cleanup-dir" // after removing leftovers at open
	syncCreateState    = "create.state"     // the state's temp file
	syncCreateMeta     = "create.meta"      // the meta's temp file
	syncCommitStateDir = "commit.state-dir" // after the state's rename, before the meta's
	syncCommitDir      = "commit.dir"       // after the meta's rename: the commit
	syncReapDir        = "reap.dir"         // after reaping
	syncDiscardDir     = "discard.dir"      // after a failed commit's meta is taken back
)

var snapSyncSites = []string{syncOpenParentDir, syncOpenCleanupDir, syncCreateState, syncCreateMeta, syncCommitStateDir, syncCommitDir, syncReapDir, syncDiscardDir}

// snapMeta is a .meta's content: raft's metadata (Size is the state's
// size in bytes) and how the state is checked.
type snapMeta struct {
	raft.SnapshotMeta
	StateCheck string
}

// snapMetaFile is a .meta file: the JSON of a snapMeta and the CRC-32C
// (Castagnoli) of exactly those bytes.
type snapMetaFile struct {
	Meta       json.RawMessage
	MetaCRC32C uint32
}

// legacyMeta is hashicorp/raft's meta.json: the metadata and the CRC-64
// (ECMA) of state.bin.
type legacyMeta struct {
	raft.SnapshotMeta
	CRC []byte
}

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// openSnapshotStore opens (creating if needed) the store in
// <dataDir>/snapshots on fsys, keeping retain snapshots, and removes the
// leftovers of snapshots a crash interrupted. Call it before raft starts,
// with the data dir's log store already open (and so locked).
func openSnapshotStore(fsy fsys.FS, dataDir string, retain int, logger hclog.Logger, skipSync func(string) bool) (*SnapshotStore, error) {
	if retain < 1 {
		return nil, fmt.Errorf("snapshot store: must retain at least one snapshot")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &SnapshotStore{
		fs: fsy, dir: filepath.Join(dataDir, snapDirName), retain: retain, log: logger,
		bufLen: snapBufLen, writeBehind: snapWriteBehind, creating: map[string]bool{}, skipSync: skipSync,
	}
	switch st, err := fsy.Stat(s.dir); {
	case errors.Is(err, fs.ErrNotExist):
		// Owner only, like every snapshot file in it: a snapshot holds the
		// cluster's grant key (docs/SECURITY.md, "What snapshots contain").
		if err := fsy.MkdirAll(s.dir, 0o700); err != nil {
			return nil, fmt.Errorf("snapshot store: %w", err)
		}
		// The new directory's own entry, so the snapshots committed in it
		// cannot vanish with it.
		if err := s.syncDir(syncOpenParentDir, filepath.Dir(s.dir)); err != nil {
			return nil, fmt.Errorf("snapshot store: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("snapshot store: %w", err)
	case !st.IsDir():
		return nil, fmt.Errorf("snapshot store: %s is not a directory", s.dir)
	}
	if err := s.cleanup(); err != nil {
		return nil, fmt.Errorf("snapshot store: %w", err)
	}
	return s, nil
}

// syncFile fsyncs f as sync site site.
func (s *SnapshotStore) syncFile(site string, f fsys.File) error {
	if s.skipSync != nil && s.skipSync(site) {
		return nil
	}
	return f.Sync()
}

// syncDir fsyncs the directory dir as sync site site.
func (s *SnapshotStore) syncDir(site, dir string) error {
	if s.skipSync != nil && s.skipSync(site) {
		return nil
	}
	return s.fs.SyncDir(dir)
}

func (s *SnapshotStore) path(name string) string { return filepath.Join(s.dir, name) }

// cleanup removes what crashed snapshots left: temp files (<id>.state.tmp,
// <id>.meta.tmp), a .state whose .meta never made it into place, and
// hashicorp's <id>.tmp directories. Each is logged; one that cannot be
// removed is logged and left (it is never read).
func (s *SnapshotStore) cleanup() error {
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return err
	}
	metas := map[string]bool{}
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), snapMetaSuffix); ok && e.Type().IsRegular() {
			metas[id] = true
		}
	}
	removed := false
	for _, e := range ents {
		name := e.Name()
		var why string
		switch {
		case e.IsDir() && strings.HasSuffix(name, snapTmpSuffix):
			if _, ok := parseSnapID(strings.TrimSuffix(name, snapTmpSuffix)); !ok {
				continue
			}
			removed = true // even partly
			if err := s.removeLegacyDir(name); err != nil {
				s.log.Warn("could not remove an unfinished snapshot left by a crash", "path", s.path(name), "error", err)
				continue
			}
			s.log.Warn("removed an unfinished snapshot left by a crash", "path", s.path(name))
			continue
		case !e.Type().IsRegular():
			continue
		case strings.HasSuffix(name, snapStateSuffix+snapTmpSuffix) || strings.HasSuffix(name, snapMetaSuffix+snapTmpSuffix):
			why = "removed an unfinished snapshot's temp file left by a crash"
		case strings.HasSuffix(name, snapStateSuffix) && !metas[strings.TrimSuffix(name, snapStateSuffix)]:
			why = "removed a snapshot state whose meta was never committed"
		default:
			continue
		}
		id := strings.TrimSuffix(strings.TrimSuffix(name, snapTmpSuffix), filepath.Ext(strings.TrimSuffix(name, snapTmpSuffix)))
		if _, ok := parseSnapID(id); !ok {
			continue // not a name this store writes: left alone
		}
		if err := s.fs.Remove(s.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove a leftover of a crashed snapshot", "path", s.path(name), "error", err)
			continue
		}
		s.log.Warn(why, "path", s.path(name))
		removed = true
	}
	if removed {
		// So the space stays free: without it the leftovers could come
		// back after another crash (and be removed again).
		return s.syncDir(syncOpenCleanupDir, s.dir)
	}
	return nil
}

// removeLegacyDir removes one of hashicorp's snapshot directories: its
// files, then itself. The caller fsyncs s.dir.
func (s *SnapshotStore) removeLegacyDir(name string) error {
	dir := s.path(name)
	ents, err := s.fs.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// meta.json first: a directory without it is not a snapshot.
	slices.SortStableFunc(ents, func(a, b fs.DirEntry) int {
		return boolCmp(b.Name() == legacyMetaName, a.Name() == legacyMetaName)
	})
	for _, e := range ents {
		if err := s.fs.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := s.fs.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// snapID is a snapshot id's parts: <term>-<index>-<msec>.
type snapID struct{ term, index, msec uint64 }

// parseSnapID parses an id in the canonical form this store and
// hashicorp's write (decimal, no sign, no leading zeros). Anything else is
// not a snapshot id; in particular it holds no path separator.
func parseSnapID(id string) (snapID, bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return snapID{}, false
	}
	var v [3]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != p {
			return snapID{}, false
		}
		v[i] = n
	}
	return snapID{v[0], v[1], v[2]}, true
}

// snapEntry is one snapshot found in the directory, of either layout.
type snapEntry struct {
	id     string
	key    snapID
	legacy bool
	meta   *raft.SnapshotMeta // nil when err says why it is unusable
	err    error
}

// newer orders as hashicorp does (term, index, then id), newest first.
func newer(a, b *snapEntry) int {
	switch {
	case a.key.term != b.key.term:
		return -cmp.Compare(a.key.term, b.key.term)
	case a.key.index != b.key.index:
		return -cmp.Compare(a.key.index, b.key.index)
	}
	return -strings.Compare(a.id, b.id)
}

// scan finds every snapshot in the directory, newest first, each with its
// metadata or the reason it is unusable. Temp files and names this store
// does not write are ignored.
func (s *SnapshotStore) scan() ([]*snapEntry, error) {
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var out []*snapEntry
	for _, e := range ents {
		name := e.Name()
		var x *snapEntry
		switch {
		case e.IsDir():
			key, ok := parseSnapID(name)
			if !ok {
				continue // includes hashicorp's <id>.tmp
			}
			x = &snapEntry{id: name, key: key, legacy: true}
			x.meta, x.err = s.readLegacyMeta(name)
		case e.Type().IsRegular() && strings.HasSuffix(name, snapMetaSuffix):
			id := strings.TrimSuffix(name, snapMetaSuffix)
			key, ok := parseSnapID(id)
			if !ok {
				continue
			}
			x = &snapEntry{id: id, key: key}
			var m *snapMeta
			if m, x.err = s.readMeta(id); x.err == nil {
				x.meta = &m.SnapshotMeta
			}
		default:
			continue
		}
		out = append(out, x)
	}
	slices.SortFunc(out, newer)
	return out, nil
}

// List returns the newest retained snapshots, newest first, both layouts
// together. A snapshot whose metadata cannot be read or does not match
// its name is left out with a warning naming the file (as hashicorp's
// store leaves out a meta.json it cannot decode); its state is not read.
func (s *SnapshotStore) List() ([]*raft.SnapshotMeta, error) {
	all, err := s.scan()
	if err != nil {
		s.log.Error("failed to scan the snapshot directory", "path", s.dir, "error", err)
		return nil, err
	}
	var out []*raft.SnapshotMeta
	for _, x := range all {
		if x.err != nil {
			s.log.Warn("snapshot left out: its metadata is unusable", "id", x.id, "error", x.err)
			continue
		}
		m := *x.meta
		out = append(out, &m)
		if len(out) == s.retain {
			break
		}
	}
	return out, nil
}

// readMeta reads and checks <id>.meta: its size bounded, its CRC-32C, a
// known StateCheck, version 1, and an id, term and index that match its
// name. Errors name the file.
func (s *SnapshotStore) readMeta(id string) (*snapMeta, error) {
	path := s.path(id + snapMetaSuffix)
	b, err := fsys.ReadFile(s.fs, path, snapMetaLimit)
	if err != nil {
		return nil, err
	}
	m, err := decodeSnapMeta(b, id)
	if err != nil {
		return nil, fmt.Errorf("snapshot meta %s: %w", path, err)
	}
	return m, nil
}

// ErrSnapshotRefused is wrapped by the errors of a snapshot Open refuses
// (and List leaves out) because of what its files hold.
var ErrSnapshotRefused = errors.New("snapshot refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSnapshotRefused, fmt.Sprintf(format, args...))
}

func decodeSnapMeta(b []byte, id string) (*snapMeta, error) {
	var f snapMetaFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, refused("not a snapshot meta: %v", err)
	}
	if len(f.Meta) == 0 {
		return nil, refused("no Meta")
	}
	if got := crc32.Checksum(f.Meta, castagnoliTable); got != f.MetaCRC32C {
		return nil, refused("Meta's CRC-32C is %08x, the file says %08x", got, f.MetaCRC32C)
	}
	// The CRC covers Meta's bytes; the rest of the file must be exactly
	// what encodeSnapMeta writes around them (encoding/json matches keys
	// case-insensitively and skips unknown ones, so a damaged key could
	// otherwise pass).
	if canon, err := encodeSnapMetaFile(f); err != nil || !bytes.Equal(canon, b) {
		return nil, refused("not in the form this store writes")
	}
	var m snapMeta
	if err := json.Unmarshal(f.Meta, &m); err != nil {
		return nil, refused("Meta: %v", err)
	}
	key, _ := parseSnapID(id)
	switch {
	case m.StateCheck != StateCheckStream:
		return nil, refused("unknown StateCheck %q (this build knows %q)", m.StateCheck, StateCheckStream)
	case m.Version != 1:
		return nil, refused("unsupported snapshot version %d", m.Version)
	case m.ID != id:
		return nil, refused("its ID %q is not its name's %q", m.ID, id)
	case m.Term != key.term || m.Index != key.index:
		return nil, refused("term %d, index %d, its name says term %d, index %d", m.Term, m.Index, key.term, key.index)
	case m.Size < 0:
		return nil, refused("negative size %d", m.Size)
	}
	return &m, nil
}

func encodeSnapMeta(m *snapMeta) ([]byte, error) {
	inner, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return encodeSnapMetaFile(snapMetaFile{Meta: inner, MetaCRC32C: crc32.Checksum(inner, castagnoliTable)})
}

func encodeSnapMetaFile(f snapMetaFile) ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// readLegacyMeta reads <id>/meta.json of hashicorp's layout.
func (s *SnapshotStore) readLegacyMeta(id string) (*raft.SnapshotMeta, error) {
	m, err := s.readLegacyMetaCRC(id)
	if err != nil {
		return nil, err
	}
	return &m.SnapshotMeta, nil
}

func (s *SnapshotStore) readLegacyMetaCRC(id string) (*legacyMeta, error) {
	path := filepath.Join(s.dir, id, legacyMetaName)
	b, err := fsys.ReadFile(s.fs, path, snapMetaLimit)
	if err != nil {
		return nil, err
	}
	var m legacyMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot meta %s: %w", path, refused("not a snapshot meta: %v", err))
	}
	switch {
	case m.Version < raft.SnapshotVersionMin || m.Version > raft.SnapshotVersionMax:
		return nil, fmt.Errorf("snapshot meta %s: %w", path, refused("unsupported snapshot version %d", m.Version))
	case m.ID != id:
		return nil, fmt.Errorf("snapshot meta %s: %w", path, refused("its ID %q is not its directory's %q", m.ID, id))
	}
	return &m, nil
}

// Open returns a snapshot's metadata and its state. For the new layout
// the state's size is checked against the meta's; its content is checked
// by its reader (the stream's CRC-32C). A legacy snapshot's state is read
// once to verify its CRC-64 first, as hashicorp's store did. Errors name
// the file.
func (s *SnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m, rc, err := s.open(id)
	if err != nil {
		s.log.Error("failed to open snapshot", "id", id, "error", err)
		return nil, nil, err
	}
	return m, rc, nil
}

func (s *SnapshotStore) open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	if _, ok := parseSnapID(id); !ok {
		return nil, nil, fmt.Errorf("snapshot %q: not a snapshot id", id)
	}
	m, err := s.readMeta(id)
	if errors.Is(err, fs.ErrNotExist) {
		if st, serr := s.fs.Stat(s.path(id)); serr == nil && st.IsDir() {
			return s.openLegacy(id)
		}
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if err != nil {
		return nil, nil, err
	}
	path := s.path(id + snapStateSuffix)
	f, size, err := s.openState(path)
	if err != nil {
		return nil, nil, err
	}
	if size != m.Size {
		f.Close()
		return nil, nil, fmt.Errorf("snapshot state %s: %w", path, refused("holds %d bytes, its meta says %d", size, m.Size))
	}
	return &m.SnapshotMeta, s.reader(f, m.Size), nil
}

// openState opens a snapshot's state file for reading and returns its
// size; errors name the file.
func (s *SnapshotStore) openState(path string) (fsys.File, int64, error) {
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("snapshot state %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("snapshot state %s: %w", path, err)
	}
	return f, st.Size(), nil
}

func (s *SnapshotStore) openLegacy(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m, err := s.readLegacyMetaCRC(id)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(s.dir, id, legacyStateName)
	f, size, err := s.openState(path)
	if err != nil {
		return nil, nil, err
	}
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	if _, err := io.Copy(h, bufio.NewReaderSize(io.NewSectionReader(f, 0, size), s.bufLen)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("snapshot state %s: %w", path, err)
	}
	if sum := h.Sum(nil); !bytes.Equal(m.CRC, sum) {
		f.Close()
		return nil, nil, fmt.Errorf("snapshot state %s: %w", path, refused("CRC-64 %x, its meta.json says %x", sum, m.CRC))
	}
	return &m.SnapshotMeta, s.reader(f, size), nil
}

// snapReader is an open snapshot's state: buffered reads, and Close
// closes the file.
type snapReader struct {
	*bufio.Reader
	f fsys.File
}

func (r *snapReader) Close() error { return r.f.Close() }

func (s *SnapshotStore) reader(f fsys.File, size int64) *snapReader {
	return &snapReader{Reader: bufio.NewReaderSize(io.NewSectionReader(f, 0, size), s.bufLen), f: f}
}

// Create starts a snapshot: its state goes to <id>.state.tmp until Close.
func (s *SnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("unsupported snapshot version %d", version)
	}
	id, err := s.newID(term, index)
	if err != nil {
		return nil, err
	}
	k := &snapSink{s: s, meta: snapMeta{
		SnapshotMeta: raft.SnapshotMeta{
			Version: version, ID: id, Index: index, Term: term,
			Configuration: configuration, ConfigurationIndex: configurationIndex,
		},
		StateCheck: StateCheckStream,
	}}
	f, err := s.fs.OpenFile(k.tmp(snapStateSuffix), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		s.release(id)
		s.log.Error("failed to create a snapshot", "id", id, "error", err)
		return nil, err
	}
	s.log.Info("creating new snapshot", "path", k.tmp(snapStateSuffix))
	k.f = f
	k.w = bufio.NewWriterSize(f, s.bufLen)
	k.wb = newWriteBehind(f, s.writeBehind)
	return k, nil
}

// newID names a new snapshot as hashicorp does, <term>-<index>-<msec>,
// moving msec on past any id in use or on disk.
func (s *SnapshotStore) newID(term, index uint64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for msec := time.Now().UnixMilli(); ; msec++ {
		id := fmt.Sprintf("%d-%d-%d", term, index, msec)
		if s.creating[id] {
			continue
		}
		taken := false
		for _, name := range []string{id + snapMetaSuffix, id + snapStateSuffix, id, id + snapStateSuffix + snapTmpSuffix} {
			switch _, err := s.fs.Stat(s.path(name)); {
			case err == nil:
				taken = true
			case !errors.Is(err, fs.ErrNotExist):
				return "", err
			}
		}
		if !taken {
			s.creating[id] = true
			return id, nil
		}
	}
}

func (s *SnapshotStore) release(id string) {
	s.mu.Lock()
	delete(s.creating, id)
	s.mu.Unlock()
}

// snapSink is a snapshot being written.
type snapSink struct {
	s    *SnapshotStore
	meta snapMeta
	f    fsys.File // the state's temp file, until it is closed
	w    *bufio.Writer
	wb   *writeBehind
	n    int64
	done bool
	// renamed records which final names this sink has put in place, for
	// a failed Close to take them back.
	renamedState, renamedMeta bool
}

func (k *snapSink) tmp(suffix string) string   { return k.s.path(k.meta.ID + suffix + snapTmpSuffix) }
func (k *snapSink) final(suffix string) string { return k.s.path(k.meta.ID + suffix) }

// ID implements raft.SnapshotSink.
func (k *snapSink) ID() string { return k.meta.ID }

// Write implements raft.SnapshotSink.
func (k *snapSink) Write(p []byte) (int, error) {
	if k.done {
		return 0, fmt.Errorf("snapshot %s: write after close", k.meta.ID)
	}
	n, err := k.w.Write(p)
	k.n += int64(n)
	k.wb.wrote(k.n - int64(k.w.Buffered()))
	return n, err
}

// Close commits the snapshot, then reaps the snapshots beyond the retained
// ones. When it returns nil the snapshot survives a power cut. A failure
// to reap is logged, not returned: the snapshot is committed by then.
func (k *snapSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	defer k.s.release(k.meta.ID)
	if err := k.commit(); err != nil {
		k.s.log.Error("failed to commit snapshot", "id", k.meta.ID, "error", err)
		k.discard()
		return err
	}
	if err := k.s.reap(); err != nil {
		k.s.log.Error("failed to reap old snapshots", "path", k.s.dir, "error", err)
	}
	return nil
}

// commit is the protocol: state fsynced, meta written and fsynced, state
// renamed, the directory fsynced (so the meta's rename cannot persist
// without the state's), meta renamed, the directory fsynced.
func (k *snapSink) commit() error {
	s := k.s
	if err := k.w.Flush(); err != nil {
		return err
	}
	if err := s.syncFile(syncCreateState, k.f); err != nil {
		return err
	}
	err := k.f.Close()
	k.f = nil
	if err != nil {
		return err
	}
	k.meta.Size = k.n
	b, err := encodeSnapMeta(&k.meta)
	if err != nil {
		return err
	}
	mf, err := s.fs.OpenFile(k.tmp(snapMetaSuffix), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := mf.Write(b); err != nil {
		mf.Close()
		return err
	}
	if err := s.syncFile(syncCreateMeta, mf); err != nil {
		mf.Close()
		return err
	}
	if err := mf.Close(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fs.Rename(k.tmp(snapStateSuffix), k.final(snapStateSuffix)); err != nil {
		return err
	}
	k.renamedState = true
	if err := s.syncDir(syncCommitStateDir, s.dir); err != nil {
		return err
	}
	if err := s.fs.Rename(k.tmp(snapMetaSuffix), k.final(snapMetaSuffix)); err != nil {
		return err
	}
	k.renamedMeta = true
	if err := s.syncDir(syncCommitDir, s.dir); err != nil {
		return err
	}
	s.log.Info("snapshot committed", "id", k.meta.ID, "size", k.meta.Size)
	return nil
}

// Cancel implements raft.SnapshotSink: the temp files are removed.
func (k *snapSink) Cancel() error {
	if k.done {
		return nil
	}
	k.done = true
	defer k.s.release(k.meta.ID)
	return k.discard()
}

// discard closes the state file if still open and removes what this sink
// wrote. When the meta had been renamed into place (only the commit's
// last directory fsync failed), it goes first and its removal is made
// durable before the state's, so no crash can leave it without its
// state, nor bring back a snapshot whose Close failed. The rest is best
// effort: whatever a crash leaves of it, the next open's cleanup removes.
func (k *snapSink) discard() error {
	var errs []error
	if k.f != nil {
		errs = append(errs, k.f.Close())
		k.f = nil
	}
	remove := func(name string) {
		if err := k.s.fs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if k.renamedMeta {
		remove(k.final(snapMetaSuffix))
		if err := k.s.syncDir(syncDiscardDir, k.s.dir); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	remove(k.tmp(snapMetaSuffix))
	remove(k.tmp(snapStateSuffix))
	if k.renamedState {
		remove(k.final(snapStateSuffix))
	}
	return errors.Join(errs...)
}

// reap removes every snapshot older than the retain newest usable ones,
// of either layout (a .meta before its .state, a legacy meta.json before
// its state.bin), then fsyncs the directory. Unusable snapshots newer
// than those are kept (List leaves them out) until they fall behind.
func (s *SnapshotStore) reap() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.scan()
	if err != nil {
		return err
	}
	kept, cut := 0, len(all)
	for i, x := range all {
		if x.err == nil {
			kept++
			if kept == s.retain {
				cut = i + 1
				break
			}
		}
	}
	removed := false
	for _, x := range all[cut:] {
		s.log.Info("reaping snapshot", "id", x.id, "legacy", x.legacy)
		removed = true
		if x.legacy {
			if err := s.removeLegacyDir(x.id); err != nil {
				return err
			}
			continue
		}
		for _, name := range []string{x.id + snapMetaSuffix, x.id + snapStateSuffix} {
			if err := s.fs.Remove(s.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if removed {
		return s.syncDir(syncReapDir, s.dir)
	}
	return nil
}
