package holder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"sexton/internal/fsys"
)

// dirScan is what a directory listing says, before any file is read.
type dirScan struct {
	hasMarker   bool
	hasGCIntent bool
	hasGCTmp    bool // .bucket_gc_intent.tmp: an intent write that never renamed
	hasFloorTmp bool // .tombstone_floor.tmp: a floor write that never renamed
	buckets     map[uint64]bool
	metas       map[uint64]bool
	journals    map[uint64]bool
	tmps        []uint64
	other       []string // names that make the directory non-empty but are not ours
	nonEmpty    bool
}

func scanDir(fs fsys.FS, dir string) (dirScan, error) {
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return dirScan{}, fmt.Errorf("holder: list %s: %w", dir, err)
	}
	sc := dirScan{buckets: map[uint64]bool{}, metas: map[uint64]bool{}, journals: map[uint64]bool{}}
	for _, e := range entries {
		name := e.Name()
		if ignorableForEmptiness(name) {
			continue
		}
		sc.nonEmpty = true
		switch name {
		case MarkerFileName:
			sc.hasMarker = true
			continue
		case GCIntentFileName:
			sc.hasGCIntent = true
			continue
		case gcIntentTmpName:
			sc.hasGCTmp = true
			continue
		case FloorFileName, SpaceReserveFileName, KnownSegmentsFileName, knownSegmentsTmpName:
			continue
		case floorTmpName:
			sc.hasFloorTmp = true
			continue
		}
		switch kind, id := parseBucketFile(name); kind {
		case kindBucket:
			sc.buckets[id] = true
		case kindMeta:
			sc.metas[id] = true
		case kindMetaTmp:
			sc.tmps = append(sc.tmps, id)
		case kindJournal:
			sc.journals[id] = true
		default:
			sc.other = append(sc.other, name)
		}
	}
	return sc, nil
}

// loadedBuckets is every committed bucket of a directory, read and
// verified, plus the leftovers recovery will clean up.
type loadedBuckets struct {
	ids         []uint64 // buckets with both files, ascending
	metas       map[uint64]*BucketMetadata
	bucketSizes map[uint64]int64
	metaSizes   map[uint64]int64
	journals    map[uint64]journalState
	staleMetas  []uint64 // .meta whose .bucket is missing
	// staleJournals are journals of no loaded bucket (its .meta or .bucket
	// is missing): they describe no committed record.
	staleJournals []uint64
	orphanBuckets []uint64 // .bucket with no .meta: no committed record
	maxID         uint64   // highest id seen in any bucket file name
}

// exclude drops ids from the scan (GC recovery is about to remove their
// files), so loading neither reads nor cleans them.
func (sc *dirScan) exclude(ids []uint64) {
	for _, id := range ids {
		delete(sc.buckets, id)
		delete(sc.metas, id)
		delete(sc.journals, id)
	}
	kept := sc.tmps[:0:0]
	for _, id := range sc.tmps {
		if !containsID(ids, id) {
			kept = append(kept, id)
		}
	}
	sc.tmps = kept
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// problemFunc receives a per-bucket problem. Open fails on the first one;
// Inspect records them and goes on.
type problemFunc func(id uint64, err error) error

func loadBuckets(fs fsys.FS, dir string, sc dirScan, onProblem problemFunc) (loadedBuckets, error) {
	lb := loadedBuckets{
		metas:       map[uint64]*BucketMetadata{},
		bucketSizes: map[uint64]int64{},
		metaSizes:   map[uint64]int64{},
		journals:    map[uint64]journalState{},
	}
	for id := range sc.buckets {
		lb.maxID = max(lb.maxID, id)
		if !sc.metas[id] {
			lb.orphanBuckets = append(lb.orphanBuckets, id)
		}
	}
	for _, id := range sc.tmps {
		lb.maxID = max(lb.maxID, id)
	}
	for id := range sc.metas {
		lb.maxID = max(lb.maxID, id)
		if !sc.buckets[id] {
			lb.staleMetas = append(lb.staleMetas, id)
			continue
		}
		lb.ids = append(lb.ids, id)
	}
	for id := range sc.journals {
		lb.maxID = max(lb.maxID, id)
		if !sc.metas[id] || !sc.buckets[id] {
			lb.staleJournals = append(lb.staleJournals, id)
		}
	}
	sort.Slice(lb.staleJournals, func(i, j int) bool { return lb.staleJournals[i] < lb.staleJournals[j] })
	sort.Slice(lb.ids, func(i, j int) bool { return lb.ids[i] < lb.ids[j] })
	sort.Slice(lb.staleMetas, func(i, j int) bool { return lb.staleMetas[i] < lb.staleMetas[j] })
	sort.Slice(lb.orphanBuckets, func(i, j int) bool { return lb.orphanBuckets[i] < lb.orphanBuckets[j] })

	good := lb.ids[:0:0]
	for _, id := range lb.ids {
		m, metaSize, bucketSize, js, err := loadOne(fs, dir, id)
		if err != nil {
			if perr := onProblem(id, err); perr != nil {
				return lb, perr
			}
			continue
		}
		lb.metas[id], lb.metaSizes[id], lb.bucketSizes[id], lb.journals[id] = m, metaSize, bucketSize, js
		good = append(good, id)
	}
	lb.ids = good
	return lb, nil
}

// loadOne reads and verifies one bucket's metadata (its .meta with its
// journal replayed on top) against its data file.
func loadOne(fs fsys.FS, dir string, id uint64) (*BucketMetadata, int64, int64, journalState, error) {
	var js journalState
	mname := filepath.Join(dir, metaName(id))
	b, err := fsys.ReadFile(fs, mname, MaxMetaFileSize)
	if err != nil {
		return nil, 0, 0, js, fmt.Errorf("%w: %s: %v", ErrCorrupt, mname, err)
	}
	m, err := decodeMeta(mname, id, b)
	if err != nil {
		return nil, 0, 0, js, err
	}
	if js, err = readJournal(fs, dir, id, m); err != nil {
		return nil, 0, 0, js, err
	}
	if js.redo, err = missingRedo(fs, filepath.Join(dir, bucketName(id)), js.redo); err != nil {
		return nil, 0, 0, js, err
	}
	if js.valid > 0 {
		if err := m.validate(id); err != nil {
			return nil, 0, 0, js, fmt.Errorf("%w: %s replayed onto %s: %v", ErrCorrupt, filepath.Join(dir, journalName(id)), mname, err)
		}
	}
	bname := filepath.Join(dir, bucketName(id))
	st, err := fs.Stat(bname)
	if err != nil {
		return nil, 0, 0, js, fmt.Errorf("holder: stat %s: %w", bname, err)
	}
	// Value bytes only the journal made durable count as present: open
	// writes them back (redo) before serving.
	if max(st.Size(), js.redoEnd()) < m.DataSize {
		return nil, 0, 0, js, fmt.Errorf("%w: %s holds %d bytes but %s commits %d", ErrCorrupt, bname, st.Size(), mname, m.DataSize)
	}
	return m, int64(len(b)), st.Size(), js, nil
}

// missingRedo keeps the redo ranges whose bytes the bucket file does not
// hold (never written back before a power cut, or torn), so only those
// are kept in memory and written at open.
func missingRedo(fs fsys.FS, name string, redo []redoRange) ([]redoRange, error) {
	if len(redo) == 0 {
		return nil, nil
	}
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("holder: open %s: %w", name, err)
	}
	defer f.Close()
	var out []redoRange
	for _, r := range redo {
		have := make([]byte, len(r.data))
		n, err := f.ReadAt(have, r.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("holder: read %s at %d: %w", name, r.off, err)
		}
		if n < len(have) || !bytes.Equal(have, r.data) {
			out = append(out, r)
		}
	}
	return out, nil
}
