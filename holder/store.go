package holder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"sexton/api"
	"sexton/internal/fsys"
)

// Store is one LOCAL_DISK directory opened for serving. It is safe for
// concurrent use.
type Store struct {
	dir  string
	fs   fsys.FS
	opts StoreOptions
	log  hclog.Logger
	lock io.Closer
	id   Identity
	rep  OpenReport
	// known is the segment ids of its cluster the holder last recorded
	// (segments.go); guarded by mu.
	known knownSegments

	putCh      chan *putReq
	committerD chan struct{}
	inflight   sync.WaitGroup // Puts and tombstone batches between the closed check and their answer
	// readBack reads direct-written values into the page cache while
	// puts are idle (readback.go).
	readBack *readBack

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a bucket's readers drop
	closed   bool
	buckets  map[uint64]*bucket
	idx      index
	openID   uint64 // bucket new puts append to; 0 = none yet
	nextID   uint64 // next bucket id to create
	closeErr error

	// GC (gc_*.go). gcMu serializes rounds and guards gcPending; the rest
	// is guarded by mu.
	gcMu      sync.Mutex
	gcPending *gcCleanup    // a round whose cleanup has not finished
	gcWake    chan struct{} // new tombstones and refused puts wake the worker
	// inlineMax is the most value bytes a commit copies into its journal
	// record (journalInlineMax; a test of space arithmetic sets 0).
	inlineMax int64
	gcWorker  *gcWorker
	gcStats   GCStats
	retired   []*bucket // replaced by a committed round, files not yet removed
	// gcSpaceWanted: puts were refused for lack of space since the last
	// pass began; the next pass reclaims dead bytes whatever the ratio and
	// the watermarks say (wantSpace).
	gcSpaceWanted atomic.Bool

	// events counts what stats cannot recompute (metrics.go).
	events *storeEvents
	// putClock counts buckets created for puts: the logical clock the
	// age-aware GC measures a bucket's age on (GC targets do not tick it;
	// they inherit the age of their youngest source).
	putClock uint64
	//lint:ignore U1000 empty and unused in a release build (testhooks_off.go)
	testHooks

	// Tombstone floor (floor.go). floors is read under mu and replaced
	// under floorMu + mu. commitMu is held by the committer across a whole
	// batch (plan to index install) and by a tombstone batch while it
	// records floors for records it found absent, so a put of an
	// incarnation either lands before that check (and is tombstoned) or
	// is planned after the floor is raised (and refused).
	floors        map[string]floorEntry
	floorFileSize int64
	floorMu       sync.Mutex
	commitMu      sync.Mutex

	// space is the reserve and the full-disk counters (space.go).
	space spaceState
}

// OpenReport says what OpenStore found and did to the directory before
// serving. Every removal is listed so an operator can see it.
type OpenReport struct {
	CreatedMarker        bool
	AdoptedUnmarked      bool
	RemovedStaleMetas    []string // .meta whose .bucket was missing
	RemovedOrphanBuckets []string // .bucket with no committed .meta
	RemovedTmpFiles      []string // .meta.tmp leftovers of interrupted persistence
	RemovedStaleJournals []string // .journal of no bucket with both .meta and .bucket
	TornJournals         []string // journals whose unfinished last record was cut off
	CreatedJournals      []string // journals created for buckets written without one
	RedoneBytes          int64    // value bytes written back from journals into bucket files
	LegacyBuckets        int      // buckets still in version-0 metadata
	ShadowedRecords      int      // live duplicates hidden by a tombstone or a newer copy
	IgnoredFiles         []string // names that are not part of a bucket store
	GCRecovery           string   // what was done about a pending .bucket_gc_intent; "" if none
	GCRecoveredState     string   // the state (PREPARED, COMMITTED) of the round GCRecovery resolved
	RemovedGCFiles       []string // bucket files a pending GC round gave up
}

// OpenStore opens (creating if needed) the bucket store in dir. See the
// package DESIGN.md for the recovery rules it applies before serving.
func OpenStore(dir string, opts StoreOptions) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fs := opts.FS
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("holder: create %s: %w", dir, err)
	}
	// Refuse an unmarked non-empty directory before creating anything in it.
	sc, err := scanDir(fs, dir)
	if err != nil {
		return nil, err
	}
	if !sc.hasMarker && sc.nonEmpty && !opts.AdoptUnmarked {
		return nil, fmt.Errorf("%w: %s is not empty and has no %s; it may belong to another store. Set %s=1 to adopt it",
			ErrUnmarkedDirectory, dir, MarkerFileName, EnvAdoptUnmarked)
	}
	lock, err := fs.Lock(filepath.Join(dir, LockFileName))
	if err != nil {
		if errors.Is(err, fsys.ErrLocked) {
			return nil, fmt.Errorf("%w: %s is locked (%s); is another holder running on it?", ErrDirectoryInUse, dir, LockFileName)
		}
		return nil, fmt.Errorf("holder: lock %s: %w", dir, err)
	}
	s := &Store{dir: dir, fs: fs, opts: opts, log: opts.Logger, lock: lock, events: newStoreEvents()}
	if err := s.recover(); err != nil {
		lock.Close()
		s.closeFiles()
		return nil, err
	}
	if err := s.openReserve(); err != nil {
		lock.Close()
		s.closeFiles()
		return nil, err
	}
	s.cond = sync.NewCond(&s.mu)
	s.gcWake = make(chan struct{}, 1)
	s.inlineMax = journalInlineMax
	s.putCh = make(chan *putReq, putQueueLen)
	s.committerD = make(chan struct{})
	go s.committer()
	s.readBack = newReadBack()
	go s.runReadBack()
	s.logOpenReport()
	return s, nil
}

// recover runs with the lock held: identity, then buckets. Everything is
// read and verified before anything is removed, so a directory that fails
// to open is left exactly as it was.
func (s *Store) recover() error {
	sc, err := scanDir(s.fs, s.dir)
	if err != nil {
		return err
	}
	if sc.hasMarker {
		s.id, err = readIdentity(s.fs, s.dir)
		if err != nil {
			return err
		}
		if s.opts.ClusterID != 0 && s.id.ClusterID != 0 && s.id.ClusterID != s.opts.ClusterID {
			return fmt.Errorf("%w: %s records cluster %016x, this holder is in cluster %016x", ErrClusterMismatch, s.dir, s.id.ClusterID, s.opts.ClusterID)
		}
	} else if sc.nonEmpty && !s.opts.AdoptUnmarked {
		// Someone filled the directory between the first look and the lock.
		return fmt.Errorf("%w: %s is not empty and has no %s", ErrUnmarkedDirectory, s.dir, MarkerFileName)
	}
	// A pending GC round is resolved first (docs/DESIGN.md §6): the buckets it
	// gives up are left out of loading, everything else is verified, and
	// only then is anything removed.
	var gr gcRecovery
	if sc.hasGCIntent {
		if gr, err = planGCRecovery(s.fs, s.dir, sc); err != nil {
			return err
		}
		sc.exclude(gr.drop)
	}
	lb, err := loadBuckets(s.fs, s.dir, sc, func(_ uint64, err error) error { return err })
	if err != nil {
		return err
	}
	if s.floors, err = readFloors(s.fs, s.dir); err != nil {
		return err
	}
	if s.known, err = readKnownSegments(s.fs, s.dir); err != nil {
		return err
	}
	if gr.intent != nil {
		// Ids never go back, even past a dropped target.
		lb.maxID = max(lb.maxID, gr.intent.Target, slices.Max(gr.intent.Sources))
	}
	// Everything verified; from here on recovery may change the directory.
	if !sc.hasMarker {
		s.id = newIdentity(s.opts.ClusterID)
		if err := writeIdentity(s.fs, s.dir, s.id); err != nil {
			return err
		}
		s.rep.CreatedMarker = true
		s.rep.AdoptedUnmarked = sc.nonEmpty
	}
	if err := s.applyGCRecovery(gr); err != nil {
		return err
	}
	if sc.hasFloorTmp {
		// A floor write that never reached its rename: nothing was
		// answered on it.
		if err := s.fs.Remove(s.path(floorTmpName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("holder: remove leftover %s: %w", s.path(floorTmpName), err)
		}
		s.rep.RemovedTmpFiles = append(s.rep.RemovedTmpFiles, floorTmpName)
	}
	if sc.hasGCTmp {
		// An intent write that never reached its rename: not an intent.
		if err := s.fs.Remove(s.path(gcIntentTmpName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("holder: remove leftover %s: %w", s.path(gcIntentTmpName), err)
		}
		s.rep.RemovedTmpFiles = append(s.rep.RemovedTmpFiles, gcIntentTmpName)
	}
	if err := s.cleanLeftovers(sc, lb); err != nil {
		return err
	}
	return s.install(lb)
}

// cleanLeftovers removes what recovery rules say is not committed: tmp
// metadata, metadata without data, data without metadata.
func (s *Store) cleanLeftovers(sc dirScan, lb loadedBuckets) error {
	var removed bool
	remove := func(name string, list *[]string) error {
		if err := s.fs.Remove(s.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("holder: remove leftover %s: %w", s.path(name), err)
		}
		*list = append(*list, name)
		removed = true
		return nil
	}
	for _, g := range []struct {
		ids  []uint64
		name func(uint64) string
		list *[]string
	}{
		{sc.tmps, metaTmpName, &s.rep.RemovedTmpFiles},
		{lb.staleMetas, metaName, &s.rep.RemovedStaleMetas},
		{lb.staleJournals, journalName, &s.rep.RemovedStaleJournals},
		{lb.orphanBuckets, bucketName, &s.rep.RemovedOrphanBuckets},
	} {
		for _, id := range g.ids {
			if err := remove(g.name(id), g.list); err != nil {
				return err
			}
		}
	}
	for _, id := range lb.ids {
		if err := s.redoJournal(id, lb); err != nil {
			return err
		}
	}
	for _, id := range lb.ids {
		js := lb.journals[id]
		if !js.torn() {
			continue
		}
		// A put commit that never finished its fdatasync: cut its record
		// off so the next append does not land behind the remains. No
		// fsync: a cut that undoes the truncation brings back the same
		// torn tail, and the next append's fdatasync persists the size.
		name := s.path(journalName(id))
		f, err := s.fs.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("holder: open %s to cut its torn tail: %w", name, err)
		}
		err = f.Truncate(js.valid)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("holder: cut the torn tail of %s at %d: %w", name, js.valid, err)
		}
		s.rep.TornJournals = append(s.rep.TornJournals, journalName(id))
	}
	s.rep.IgnoredFiles = sc.other
	// The newest bucket is the one puts may append to: a directory written
	// without journals gets its journal here, made durable by the
	// directory fsync below before any put can append to it. A cut before
	// that fsync leaves the directory as it was; the next open creates it
	// again.
	if n := len(lb.ids); n > 0 {
		id := lb.ids[n-1]
		if !lb.journals[id].exists && lb.metas[id].V != metaVersionLegacy {
			name := s.path(journalName(id))
			f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return fmt.Errorf("holder: create %s: %w", name, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("holder: close %s: %w", name, err)
			}
			s.rep.CreatedJournals = append(s.rep.CreatedJournals, journalName(id))
			if err := syncOpenJournalDir.dir(s.fs, s.dir); err != nil {
				return fmt.Errorf("holder: fsync %s after creating %s: %w", s.dir, name, err)
			}
			js := lb.journals[id]
			js.exists = true
			lb.journals[id] = js
		}
	}
	if removed {
		if err := syncOpenCleanupDir.dir(s.fs, s.dir); err != nil {
			return fmt.Errorf("holder: fsync %s after cleanup: %w", s.dir, err)
		}
	}
	return nil
}

// redoJournal writes back into bucket id's file the value bytes its
// journal carries and the file does not hold: records whose commit
// fdatasynced only the journal, cut before the data reached the disk. No
// fsync: the journal keeps the bytes until a compaction, which fdatasyncs
// the bucket file before it empties the journal.
func (s *Store) redoJournal(id uint64, lb loadedBuckets) error {
	js := lb.journals[id]
	if len(js.redo) == 0 {
		return nil
	}
	name := s.path(bucketName(id))
	f, err := s.fs.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("holder: open %s to write back journaled values: %w", name, err)
	}
	for _, r := range js.redo {
		if _, err := f.WriteAt(r.data, r.off); err != nil {
			_ = f.Close()
			return fmt.Errorf("holder: write back journaled values into %s at %d: %w", name, r.off, err)
		}
		s.rep.RedoneBytes += int64(len(r.data))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("holder: close %s: %w", name, err)
	}
	lb.bucketSizes[id] = max(lb.bucketSizes[id], js.redoEnd())
	js.redo = nil
	lb.journals[id] = js
	return nil
}

// install builds the in-memory buckets and index and opens the files.
func (s *Store) install(lb loadedBuckets) error {
	idx, states, shadowed := buildIndex(lb.metas, lb.ids, s.floors)
	s.idx = idx
	s.rep.ShadowedRecords = shadowed
	s.buckets = make(map[uint64]*bucket, len(lb.ids))
	s.nextID = lb.maxID + 1
	for i, id := range lb.ids {
		last := i == len(lb.ids)-1
		flag := os.O_RDONLY
		if last {
			flag = os.O_RDWR
		}
		f, err := s.fs.OpenFile(s.path(bucketName(id)), flag, 0)
		if err != nil {
			return fmt.Errorf("holder: open %s: %w", s.path(bucketName(id)), err)
		}
		m := lb.metas[id]
		js := lb.journals[id]
		b := &bucket{id: id, file: f, meta: m, states: states[id],
			fileSize: lb.bucketSizes[id], metaFileSize: lb.metaSizes[id], legacy: m.V == metaVersionLegacy,
			jEnd: js.valid}
		if last && js.exists {
			if b.jFile, err = s.openJournal(id); err != nil {
				_ = f.Close()
				return err
			}
		}
		b.recount()
		// Creation order is all a restart knows of age; ids give it.
		b.born = uint64(i + 1)
		s.putClock = b.born
		if b.legacy {
			s.rep.LegacyBuckets++
		}
		s.buckets[id] = b
		// Only the newest bucket takes appends, and only while it has room;
		// a legacy bucket is never appended to (it is rewritten as version 1
		// by its first tombstone, never extended).
		if last && !b.legacy && len(m.Objects) < s.opts.BucketKeysLimit && m.DataSize < s.opts.BucketSizeLimit {
			s.openID = id
		}
	}
	return nil
}

func (s *Store) logOpenReport() {
	r := s.rep
	s.log.Info("holder store opened", "dir", s.dir, "segment", s.id.SegmentID, "buckets", len(s.buckets),
		"live_objects", len(s.idx.live), "created_marker", r.CreatedMarker, "adopted_unmarked", r.AdoptedUnmarked,
		"legacy_buckets", r.LegacyBuckets, "shadowed_records", r.ShadowedRecords)
	for _, g := range []struct {
		files []string
		log   func(string, ...any)
		msg   string
	}{
		{r.RemovedStaleMetas, s.log.Warn, "removed bucket metadata whose data file is missing"},
		{r.RemovedOrphanBuckets, s.log.Warn, "removed bucket data file with no committed metadata"},
		{r.RemovedTmpFiles, s.log.Info, "removed interrupted metadata write"},
		{r.RemovedStaleJournals, s.log.Warn, "removed put journal of no committed bucket"},
		{r.TornJournals, s.log.Info, "dropped an unfinished (never acknowledged) last record of a put journal"},
		{r.CreatedJournals, s.log.Info, "created put journal for a bucket written without one"},
	} {
		for _, n := range g.files {
			g.log(g.msg, "file", s.path(n))
		}
	}
	if r.GCRecovery != "" {
		s.log.Warn("resolved a pending bucket GC round", "action", r.GCRecovery, "removed", r.RemovedGCFiles)
	}
	for _, n := range r.IgnoredFiles {
		s.log.Warn("ignoring file that is not part of the bucket store", "file", s.path(n))
	}
}

// SegmentID is the directory's stable identity.
func (s *Store) SegmentID() api.SegmentID { return s.id.SegmentID }

// Identity is the directory's marker content.
func (s *Store) Identity() Identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// OpenReport says what OpenStore found and cleaned up.
func (s *Store) OpenReport() OpenReport { return s.rep }

// Close waits for in-flight puts, tombstone batches and reads, closes every file and releases
// the directory lock. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		err := s.closeErr
		s.mu.Unlock()
		return err
	}
	s.closed = true
	w := s.gcWorker
	s.mu.Unlock()

	if w != nil {
		close(w.stop)
		<-w.done
	}
	s.stopReadBack()
	s.inflight.Wait()
	close(s.putCh)
	<-s.committerD

	s.mu.Lock()
	for s.totalReaders() > 0 {
		s.cond.Wait()
	}
	err := s.closeFiles()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	s.closeErr = err
	s.mu.Unlock()
	return err
}

func (s *Store) totalReaders() int {
	n := 0
	for _, b := range s.buckets {
		n += b.readers
	}
	for _, b := range s.retired {
		n += b.readers
	}
	return n
}

func (s *Store) closeFiles() error {
	var first error
	for _, b := range append(s.retired, mapValues(s.buckets)...) {
		if b.file != nil {
			if err := b.file.Close(); err != nil && first == nil {
				first = err
			}
			b.file = nil
		}
		if b.jFile != nil {
			if err := b.jFile.Close(); err != nil && first == nil {
				first = err
			}
			b.jFile = nil
		}
	}
	return first
}

func mapValues(m map[uint64]*bucket) []*bucket {
	out := make([]*bucket, 0, len(m))
	for _, b := range m {
		out = append(out, b)
	}
	return out
}
