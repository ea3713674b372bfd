package holder

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"sexton/api"
	"sexton/internal/fsys"
)

// SpaceReserveFileName is the preallocated file that holds the space
// reserve (DESIGN.md "A full disk never stops deletion").
const SpaceReserveFileName = ".space_reserve"

// EnvMetadataReserve sets the metadata reserve of the holder command
// (bytes, or "auto" for MetadataReserveFor the bucket keys limit).
const EnvMetadataReserve = "SEXTON_HOLDER_METADATA_RESERVE"

// Sizing of the metadata reserve (see MetadataReserveFor).
const (
	// metaRecordWorst bounds one record's msgpack encoding in a bucket's
	// metadata: the longest key and tenant plus the fixed fields (names,
	// incarnation, offset, size, CRC, tombstone flag) with room to spare.
	metaRecordWorst = api.MaxKeyLen + api.MaxTenantLen + 128
	// metaHeaderWorst bounds the rest of a bucket's metadata file.
	metaHeaderWorst = 256
	// floorEntryWorst bounds one tombstone floor entry (key, incarnation,
	// time).
	floorEntryWorst = api.MaxKeyLen + 64
	// MinMetadataReserve is the smallest reserve the default formula gives.
	MinMetadataReserve int64 = 1 << 20
	// MaxMetadataReserve bounds a configured reserve.
	MaxMetadataReserve int64 = 1 << 30
)

// MetadataReserveFor is the default metadata reserve for a bucket keys
// limit K:
//
//	R = 2·(metaHeaderWorst + K·metaRecordWorst)   two full-bucket .meta writes
//	  + K·floorEntryWorst                          a bucket's worth of floor growth
//	  + 2·maxGCIntentFileSize                      PREPARED and COMMITTED intents
//
// at least MinMetadataReserve. Two full metadata files: a tombstone's
// .meta.tmp and a GC target's .meta can be in flight at once, and each
// exists next to the file it replaces until the rename. With the default
// K = 500 this is about 6.5 MiB.
func MetadataReserveFor(bucketKeysLimit int) int64 {
	k := int64(bucketKeysLimit)
	r := 2*(metaHeaderWorst+k*metaRecordWorst) + k*floorEntryWorst + 2*maxGCIntentFileSize
	return max(r, MinMetadataReserve)
}

// Paths of the ENOSPC counters (SpaceStats.ENOSPC, the
// sexton_holder_enospc_total{path} metric).
const (
	spacePathPut       = "put"       // data or metadata of a put
	spacePathTombstone = "tombstone" // a tombstone's .meta
	spacePathFloor     = "floor"     // .tombstone_floor, by a tombstone batch
	spacePathGCFloor   = "gc_floor"  // .tombstone_floor, by a GC round
	spacePathGCIntent  = "gc_intent" // .bucket_gc_intent
	spacePathGCMeta    = "gc_meta"   // a GC target's .meta
	spacePathGCData    = "gc_data"   // a GC target's data
	spacePathReserve   = "reserve"   // creating .space_reserve
	spacePathIdentity  = "identity"  // the identity marker, bound to a cluster at the first mount
	spaceLogEvery      = time.Minute // a repeated full-disk warning is logged at most this often
	gcMergeSlackNoRsv  = int64(64 << 10)
)

// spaceState is the store's view of its filesystem's space: the reserve
// file and the counters SpaceStats reports. mu is innermost (never held
// across I/O); reserveMu serializes creating and releasing the file.
type spaceState struct {
	reserveMu sync.Mutex

	mu            sync.Mutex
	capacityFlag  int64
	held          bool
	heldBytes     int64
	releases      uint64
	recreations   uint64
	putsRefused   uint64
	enospc        map[string]uint64
	lastWarn      map[string]time.Time
	suppressed    map[string]int
	lastStatfsErr string
}

// SpaceStats is the store's space as an operator sees it.
type SpaceStats struct {
	FSTotalBytes int64 // the filesystem's size (statfs)
	FSFreeBytes  int64 // bytes an unprivileged writer can still allocate
	// CapacityConfiguredBytes is --capacity (0 = unknown);
	// CapacityEffectiveBytes is what the holder reports to the master: the
	// smaller of it and what the filesystem can really give this store.
	CapacityConfiguredBytes int64
	CapacityEffectiveBytes  int64
	// MetadataReserveBytes is R: puts are refused while free space is
	// below it, and .space_reserve is preallocated to it (0 = off).
	MetadataReserveBytes int64
	ReserveFileBytes     int64 // size of .space_reserve now; 0 when released
	ReserveHeld          bool
	ReserveReleases      uint64 // times the reserve was released on ENOSPC
	ReserveRecreations   uint64 // times it was recreated once space was back
	PutsRefused          uint64 // puts refused NO_SPACE by the reserve check
	// ENOSPC counts failed writes by path: put, tombstone, floor,
	// gc_floor, gc_intent, gc_meta, gc_data, reserve.
	ENOSPC      map[string]uint64
	StatfsError string // the last statfs failure, "" when it works
}

// isNoSpace reports a full disk or quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// freeBytes is the free space of the filesystem, or -1 when it cannot be
// read.
func (s *Store) freeBytes() int64 {
	if sp, err := s.statfs(); err == nil {
		return sp.Free
	}
	return -1
}

func (s *Store) statfs() (fsys.Space, error) {
	sp, err := s.fs.Statfs(s.dir)
	s.space.mu.Lock()
	if err != nil {
		s.space.lastStatfsErr = err.Error()
	} else {
		s.space.lastStatfsErr = ""
	}
	s.space.mu.Unlock()
	return sp, err
}

// SetCapacity records the configured capacity (--capacity, 0 = unknown)
// that EffectiveCapacity clamps.
func (s *Store) SetCapacity(bytes int64) {
	s.space.mu.Lock()
	s.space.capacityFlag = bytes
	s.space.mu.Unlock()
}

// EffectiveCapacity is the configured capacity clamped to what the
// filesystem can give this store (see effectiveCapacity); 0 when none is
// configured.
func (s *Store) EffectiveCapacity() int64 {
	s.space.mu.Lock()
	c := s.space.capacityFlag
	s.space.mu.Unlock()
	return s.effectiveCapacity(c)
}

// effectiveCapacity clamps a configured capacity to the bytes the store's
// data can ever occupy on this filesystem: what its files use now plus the
// free space, less the metadata reserve and less what the reserve file
// still has to take back. An unknown capacity (0) stays unknown, and so
// does the configured value when statfs fails.
func (s *Store) effectiveCapacity(configured int64) int64 {
	if configured <= 0 {
		return configured
	}
	sp, err := s.statfs()
	if err != nil {
		return configured
	}
	return min(configured, s.dataUsable(sp))
}

func (s *Store) dataUsable(sp fsys.Space) int64 {
	r := s.opts.MetadataReserve
	s.space.mu.Lock()
	deficit := r - s.space.heldBytes
	s.space.mu.Unlock()
	return s.Usage().UsedBytes + max(0, sp.Free-r-max(0, deficit))
}

// noteNoSpace counts an ENOSPC on path.
func (s *Store) noteNoSpace(path string) {
	s.space.mu.Lock()
	if s.space.enospc == nil {
		s.space.enospc = map[string]uint64{}
	}
	s.space.enospc[path]++
	s.space.mu.Unlock()
}

// warnLimited logs a full-disk warning of one kind at most once per
// spaceLogEvery; the next one says how many were suppressed meanwhile.
func (s *Store) warnLimited(kind, msg string, args ...any) {
	now := time.Now()
	s.space.mu.Lock()
	if s.space.lastWarn == nil {
		s.space.lastWarn, s.space.suppressed = map[string]time.Time{}, map[string]int{}
	}
	if last, ok := s.space.lastWarn[kind]; ok && now.Sub(last) < spaceLogEvery {
		s.space.suppressed[kind]++
		s.space.mu.Unlock()
		return
	}
	n := s.space.suppressed[kind]
	s.space.lastWarn[kind], s.space.suppressed[kind] = now, 0
	s.space.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	s.log.Warn(msg, args...)
}

// retryAfterNoSpace is called with a failed metadata write of a deletion
// or reclamation path: if it failed for lack of space and the reserve is
// still held, the reserve is released and true says "write again". It
// counts the ENOSPC either way.
func (s *Store) retryAfterNoSpace(path string, err error) bool {
	if !isNoSpace(err) {
		return false
	}
	s.noteNoSpace(path)
	if s.releaseReserve(path) {
		return true
	}
	s.warnLimited("meta:"+path, "disk full: a metadata write failed and the space reserve is already released; retrying after GC frees space",
		"path", path, "err", err)
	return false
}

// releaseReserve unlinks .space_reserve so the write that met ENOSPC can
// be retried in its space. False when there was nothing to release.
func (s *Store) releaseReserve(path string) bool {
	s.space.reserveMu.Lock()
	defer s.space.reserveMu.Unlock()
	s.space.mu.Lock()
	held, bytes := s.space.held, s.space.heldBytes
	s.space.mu.Unlock()
	if !held {
		return false
	}
	// The unlink frees the blocks at once; no fsync is needed for that,
	// and a crash that brings the file back brings its space back too.
	if err := s.fs.Remove(s.path(SpaceReserveFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		// Truncating frees the blocks as well if unlink is refused.
		if terr := s.truncateReserve(); terr != nil {
			s.log.Error("cannot release the space reserve", "file", s.path(SpaceReserveFileName), "err", err, "truncate_err", terr)
			return false
		}
	}
	s.space.mu.Lock()
	s.space.held, s.space.heldBytes = false, 0
	s.space.releases++
	s.space.mu.Unlock()
	free := s.freeBytes()
	s.log.Warn("disk full: released the space reserve so deletion and GC can proceed; puts are refused until space is reclaimed",
		"path", path, "reserve_bytes", bytes, "fs_free_bytes", free, "file", s.path(SpaceReserveFileName))
	return true
}

func (s *Store) truncateReserve() error {
	return s.truncateFile(SpaceReserveFileName)
}

// truncateFile empties the file name of the store's directory.
func (s *Store) truncateFile(name string) error {
	f, err := s.fs.OpenFile(s.path(name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ensureReserve (re)creates .space_reserve at MetadataReserve bytes when
// it is not held and the free space allows it with MetadataReserve to
// spare (so puts are not refused the moment it is back). It reports
// whether it created the reserve now.
func (s *Store) ensureReserve() (bool, error) {
	r := s.opts.MetadataReserve
	if r <= 0 {
		return false, nil
	}
	s.space.reserveMu.Lock()
	defer s.space.reserveMu.Unlock()
	s.space.mu.Lock()
	held := s.space.held
	s.space.mu.Unlock()
	if held {
		return false, nil
	}
	name := s.path(SpaceReserveFileName)
	var have int64
	if st, err := s.fs.Stat(name); err == nil {
		have = st.Size()
	}
	if have < r {
		sp, err := s.statfs()
		if err != nil {
			return false, err
		}
		if sp.Free < (r-have)+r {
			return false, nil // not yet: space first goes to deletion and GC
		}
	}
	f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("holder: create %s: %w", name, err)
	}
	fail := func(step string, err error) (bool, error) {
		_ = f.Close()
		_ = s.fs.Remove(name) // a partial reserve is no reserve
		if isNoSpace(err) {
			s.noteNoSpace(spacePathReserve)
		}
		return false, fmt.Errorf("holder: %s %s: %w", step, name, err)
	}
	if err := s.fs.Fallocate(f, r); err != nil {
		return fail("fallocate", err)
	}
	if err := syncReserveData.file(f); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		_ = s.fs.Remove(name)
		return false, fmt.Errorf("holder: close %s: %w", name, err)
	}
	if err := syncReserveDir.dir(s.fs, s.dir); err != nil {
		return false, fmt.Errorf("holder: fsync %s after creating %s: %w", s.dir, name, err)
	}
	s.space.mu.Lock()
	s.space.held, s.space.heldBytes = true, max(have, r)
	s.space.mu.Unlock()
	return have < r, nil
}

// openReserve sets the reserve up at open: an existing file is adopted
// (grown to size if it is short), a missing one created when there is
// room; a reserve turned off removes a leftover file.
func (s *Store) openReserve() error {
	if s.opts.MetadataReserve <= 0 {
		name := s.path(SpaceReserveFileName)
		if err := s.fs.Remove(name); err == nil {
			s.log.Info("removed the space reserve: the metadata reserve is off", "file", name)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("holder: remove %s: %w", name, err)
		}
		return nil
	}
	created, err := s.ensureReserve()
	if err != nil {
		s.log.Warn("cannot create the space reserve; deletion on a full disk relies on the free-space reserve alone until it can",
			"file", s.path(SpaceReserveFileName), "reserve_bytes", s.opts.MetadataReserve, "err", err)
		return nil
	}
	s.space.mu.Lock()
	held := s.space.held
	s.space.mu.Unlock()
	if !held {
		s.warnLimited("reserve-open", "disk too full to create the space reserve at open; it is created once space is back",
			"reserve_bytes", s.opts.MetadataReserve)
	} else if created {
		s.log.Info("space reserve created", "file", s.path(SpaceReserveFileName), "reserve_bytes", s.opts.MetadataReserve)
	}
	return nil
}

// maybeRecreateReserve recreates a released reserve once free space is
// back above twice the reserve.
func (s *Store) maybeRecreateReserve() {
	created, err := s.ensureReserve()
	if err != nil {
		s.warnLimited("reserve-recreate", "recreating the space reserve failed; retrying later", "err", err)
		return
	}
	if !created {
		return
	}
	s.space.mu.Lock()
	s.space.recreations++
	s.space.mu.Unlock()
	free := s.freeBytes()
	s.log.Info("space reserve recreated: free space is back above twice the reserve; puts are accepted again",
		"reserve_bytes", s.opts.MetadataReserve, "fs_free_bytes", free, "file", s.path(SpaceReserveFileName))
}

// admitPuts refuses, NO_SPACE, the puts of a batch that would leave less
// than the metadata reserve free: that space belongs to the tombstones and
// GC metadata that free the disk again. It returns the admitted ones.
func (s *Store) admitPuts(batch []*putReq) []*putReq {
	r := s.opts.MetadataReserve
	if r <= 0 {
		return batch
	}
	s.maybeRecreateReserve()
	sp, err := s.statfs()
	if err != nil {
		return batch // cannot tell: the write itself reports a full disk
	}
	free := sp.Free
	s.space.mu.Lock()
	if !s.space.held {
		free -= r // the reserve file is owed before any put
	}
	s.space.mu.Unlock()
	out := batch[:0:0]
	refused := 0
	for _, q := range batch {
		if q.streamed {
			// Admitted by PutStream before its bytes were written: they
			// are on the disk already, in the free space just read.
			out = append(out, q)
			continue
		}
		// A small value may also be copied into its journal record until
		// the journal is compacted: count it twice.
		need := q.size
		if need <= s.inlineMax {
			need *= 2
		}
		if free-need < r {
			q.err = fmt.Errorf("%w: %d bytes would leave %d free, below the metadata reserve of %d bytes", api.ErrNoSpace, need, max(0, free-need), r)
			refused++
			continue
		}
		free -= need
		out = append(out, q)
	}
	if refused > 0 {
		s.space.mu.Lock()
		s.space.putsRefused += uint64(refused)
		s.space.mu.Unlock()
		s.warnLimited("puts", "disk full: refusing puts that would eat into the metadata reserve (NO_SPACE)",
			"refused", refused, "fs_free_bytes", sp.Free, "metadata_reserve_bytes", r)
		s.wantSpace()
	}
	return out
}

// gcMergeBudget is the most live bytes a merge round may copy now: the
// free space less half the metadata reserve (the other half, and the
// reserve file, stay for tombstones and the round's own metadata). 0
// means no limit (statfs failed: the copy reports a full disk itself).
func (s *Store) gcMergeBudget() int64 {
	sp, err := s.statfs()
	if err != nil {
		return 0
	}
	slack := s.opts.MetadataReserve / 2
	if slack == 0 {
		slack = gcMergeSlackNoRsv
	}
	return max(1, sp.Free-slack)
}

// SpaceStats reports the filesystem's space, the effective capacity and
// the reserve.
func (s *Store) SpaceStats() SpaceStats {
	st := SpaceStats{MetadataReserveBytes: s.opts.MetadataReserve}
	sp, err := s.statfs()
	if err == nil {
		st.FSTotalBytes, st.FSFreeBytes = sp.Total, sp.Free
	}
	s.space.mu.Lock()
	st.CapacityConfiguredBytes = s.space.capacityFlag
	st.ReserveHeld, st.ReserveFileBytes = s.space.held, s.space.heldBytes
	st.ReserveReleases, st.ReserveRecreations, st.PutsRefused = s.space.releases, s.space.recreations, s.space.putsRefused
	st.ENOSPC = make(map[string]uint64, len(s.space.enospc))
	for k, v := range s.space.enospc {
		st.ENOSPC[k] = v
	}
	st.StatfsError = s.space.lastStatfsErr
	s.space.mu.Unlock()
	st.CapacityEffectiveBytes = st.CapacityConfiguredBytes
	if err == nil && st.CapacityConfiguredBytes > 0 {
		st.CapacityEffectiveBytes = min(st.CapacityConfiguredBytes, s.dataUsable(sp))
	}
	return st
}

// enospcPaths lists the ENOSPC counter paths in a fixed order.
func enospcPaths(m map[string]uint64) []string {
	out := []string{spacePathPut, spacePathTombstone, spacePathFloor, spacePathGCFloor, spacePathGCIntent, spacePathGCMeta, spacePathGCData, spacePathReserve, spacePathIdentity}
	known := map[string]bool{}
	for _, p := range out {
		known[p] = true
	}
	var extra []string
	for p := range m {
		if !known[p] {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}
