package holder

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Fixed names in a store directory (docs/DESIGN.md §5).
const (
	MarkerFileName   = ".mooncake_local_disk_segment_id"
	LockFileName     = ".lock"
	GCIntentFileName = ".bucket_gc_intent"

	bucketSuffix  = ".bucket"
	metaSuffix    = ".meta"
	metaTmpSuffix = ".meta.tmp"
	journalSuffix = ".journal"
	markerTmpName = MarkerFileName + ".tmp"

	// bucketIDDigits zero-pads ids so names sort in id order.
	bucketIDDigits = 20
)

func bucketName(id uint64) string  { return fmt.Sprintf("%020d%s", id, bucketSuffix) }
func metaName(id uint64) string    { return fmt.Sprintf("%020d%s", id, metaSuffix) }
func metaTmpName(id uint64) string { return fmt.Sprintf("%020d%s", id, metaTmpSuffix) }
func journalName(id uint64) string { return fmt.Sprintf("%020d%s", id, journalSuffix) }

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

// fileKind classifies a directory entry of a bucket store.
type fileKind int

const (
	kindOther fileKind = iota
	kindBucket
	kindMeta
	kindMetaTmp
	kindJournal
)

// parseBucketFile returns the kind and bucket id of a bucket file name.
// Names that are not exactly 20 digits plus a known suffix are kindOther.
func parseBucketFile(name string) (fileKind, uint64) {
	var kind fileKind
	var stem string
	switch {
	case strings.HasSuffix(name, metaTmpSuffix):
		kind, stem = kindMetaTmp, strings.TrimSuffix(name, metaTmpSuffix)
	case strings.HasSuffix(name, metaSuffix):
		kind, stem = kindMeta, strings.TrimSuffix(name, metaSuffix)
	case strings.HasSuffix(name, journalSuffix):
		kind, stem = kindJournal, strings.TrimSuffix(name, journalSuffix)
	case strings.HasSuffix(name, bucketSuffix):
		kind, stem = kindBucket, strings.TrimSuffix(name, bucketSuffix)
	default:
		return kindOther, 0
	}
	if len(stem) != bucketIDDigits {
		return kindOther, 0
	}
	for i := 0; i < len(stem); i++ {
		if stem[i] < '0' || stem[i] > '9' {
			return kindOther, 0
		}
	}
	id, err := strconv.ParseUint(stem, 10, 64)
	if err != nil || id == 0 {
		return kindOther, 0
	}
	return kind, id
}
