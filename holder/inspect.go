package holder

import (
	"fmt"
	"path/filepath"

	"sexton/internal/fsys"
)

// InspectReport is an offline view of a store directory.
type InspectReport struct {
	Dir               string
	Marked            bool
	Identity          Identity // zero when unmarked or unreadable
	GCIntentPending   bool
	GCIntent          string       // the pending round, e.g. "COMMITTED sources [1 2] target 5"
	Buckets           []BucketStat // committed buckets that verified, id order
	LiveObjects       int
	TombstonedObjects int
	LiveBytes         int64
	DeadBytes         int64
	UsedBytes         int64
	StaleMetas        []string // .meta without .bucket (OpenStore removes them)
	OrphanBuckets     []string // .bucket without .meta (OpenStore removes them)
	TmpFiles          []string // .meta.tmp and .tombstone_floor.tmp leftovers (OpenStore removes them)
	IgnoredFiles      []string
	// FloorEntries is how many keys the tombstone floor (.tombstone_floor)
	// holds: keys whose tombstoned incarnations stay refused after GC.
	FloorEntries int
	// SpaceReserveHeld says .space_reserve is there, SpaceReserveBytes its
	// size: absent means released on a full disk (recreated once space is
	// back) or the reserve is off.
	SpaceReserveHeld  bool
	SpaceReserveBytes int64
	// FSTotalBytes and FSFreeBytes are statfs of the directory's
	// filesystem (0 when it fails).
	FSTotalBytes, FSFreeBytes int64
	// Problems lists what would make OpenStore fail closed, one line each.
	Problems []string
}

// Inspect reads dir without locking it and without changing anything: the
// identity, every bucket's live and tombstoned counts and bytes, and what
// recovery would clean up or refuse. A corrupt file is a Problem in the
// report, not an error; the error is for a directory that cannot be read.
func Inspect(dir string) (InspectReport, error) { return InspectFS(fsys.OS{}, dir) }

// InspectFS is Inspect through a given filesystem.
func InspectFS(fs fsys.FS, dir string) (InspectReport, error) {
	rep := InspectReport{Dir: dir}
	sc, err := scanDir(fs, dir)
	if err != nil {
		return rep, err
	}
	rep.Marked, rep.GCIntentPending, rep.IgnoredFiles = sc.hasMarker, sc.hasGCIntent, sc.other
	if sc.hasMarker {
		if rep.Identity, err = readIdentity(fs, dir); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
	} else if sc.nonEmpty {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: non-empty without %s", dir, MarkerFileName))
	}
	if sc.hasGCIntent {
		// OpenStore resolves a readable intent; only one it cannot resolve
		// is a problem.
		if gr, err := planGCRecovery(fs, dir, sc); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		} else {
			if in, _ := readGCIntent(fs, dir); in != nil {
				rep.GCIntent = in.String()
			}
			// The buckets the intent gives up are removed unread by
			// OpenStore, half-unlinked ones included: not problems.
			sc.exclude(gr.drop)
		}
	}
	lb, _ := loadBuckets(fs, dir, sc, func(_ uint64, err error) error {
		rep.Problems = append(rep.Problems, err.Error())
		return nil
	})
	for _, id := range lb.staleMetas {
		rep.StaleMetas = append(rep.StaleMetas, metaName(id))
	}
	for _, id := range lb.orphanBuckets {
		rep.OrphanBuckets = append(rep.OrphanBuckets, bucketName(id))
	}
	for _, id := range sc.tmps {
		rep.TmpFiles = append(rep.TmpFiles, metaTmpName(id))
	}
	if sc.hasFloorTmp {
		rep.TmpFiles = append(rep.TmpFiles, floorTmpName)
	}
	floors, err := readFloors(fs, dir)
	if err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}
	rep.FloorEntries = len(floors)
	if st, err := fs.Stat(filepath.Join(dir, SpaceReserveFileName)); err == nil {
		rep.SpaceReserveHeld, rep.SpaceReserveBytes = true, st.Size()
	}
	if sp, err := fs.Statfs(dir); err == nil {
		rep.FSTotalBytes, rep.FSFreeBytes = sp.Total, sp.Free
	}
	_, states, _ := buildIndex(lb.metas, lb.ids, floors)
	for _, id := range lb.ids {
		m := lb.metas[id]
		b := &bucket{id: id, meta: m, states: states[id]}
		b.recount()
		rep.Buckets = append(rep.Buckets, BucketStat{ID: id, DataSize: m.DataSize, FileSize: lb.bucketSizes[id],
			LiveBytes: b.liveBytes, DeadBytes: b.deadBytes, LiveCount: b.liveCount, DeadCount: b.deadCount,
			Legacy: m.V == metaVersionLegacy})
		rep.LiveObjects += b.liveCount
		rep.TombstonedObjects += b.deadCount
		rep.LiveBytes += b.liveBytes
		rep.DeadBytes += b.deadBytes
		rep.UsedBytes += lb.bucketSizes[id] + lb.metaSizes[id] + lb.journals[id].valid
	}
	return rep, nil
}
