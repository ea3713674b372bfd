package holder

import (
	"sort"

	"sexton/api"
)

// Usage summarizes the store for heartbeats and watermarks.
type Usage struct {
	UsedBytes         int64 // bytes of .bucket and .meta files on disk
	LiveBytes         int64 // value bytes of live records
	DeadBytes         int64 // value bytes of tombstoned (or shadowed) records
	Buckets           int
	LiveObjects       int
	TombstonedObjects int
}

// BucketStat describes one bucket, for GC victim choice and inspection.
type BucketStat struct {
	ID        uint64
	DataSize  int64 // committed data bytes
	FileSize  int64 // bytes of the .bucket file
	LiveBytes int64
	DeadBytes int64
	LiveCount int
	DeadCount int
	Open      bool // new puts append here
	Legacy    bool // still in version-0 metadata
	Readers   int  // in-flight reads pinning it
}

// DeadRatio is the share of the bucket's bytes that are dead (0 for a
// bucket with none).
func (b BucketStat) DeadRatio() float64 {
	if t := b.LiveBytes + b.DeadBytes; t > 0 {
		return float64(b.DeadBytes) / float64(t)
	}
	return 0
}

// Usage returns current totals.
func (s *Store) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var u Usage
	for _, b := range s.buckets {
		u.UsedBytes += b.fileSize + b.metaFileSize + b.jEnd
		u.LiveBytes += b.liveBytes
		u.DeadBytes += b.deadBytes
		u.LiveObjects += b.liveCount
		u.TombstonedObjects += b.deadCount
		u.Buckets++
	}
	for _, b := range s.retired {
		u.UsedBytes += b.fileSize + b.metaFileSize + b.jEnd // still on disk until cleanup
	}
	return u
}

// BucketStats lists every bucket in id order.
func (s *Store) BucketStats() []BucketStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BucketStat, 0, len(s.buckets))
	for _, b := range s.buckets {
		out = append(out, BucketStat{
			ID: b.id, DataSize: b.meta.DataSize, FileSize: b.fileSize,
			LiveBytes: b.liveBytes, DeadBytes: b.deadBytes, LiveCount: b.liveCount, DeadCount: b.deadCount,
			Open: b.id == s.openID, Legacy: b.legacy, Readers: b.readers,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LiveRefs lists every live (key, incarnation), sorted by key then
// incarnation, for reconciliation. Tombstoned records are not in it.
func (s *Store) LiveRefs() []api.ObjectRef {
	s.mu.Lock()
	out := make([]api.ObjectRef, 0, len(s.idx.live))
	for k := range s.idx.live {
		out = append(out, api.ObjectRef{Key: k.key, Incarnation: k.inc})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return refLess(out[i], out[j]) })
	return out
}

func refLess(a, b api.ObjectRef) bool {
	if a.Key != b.Key {
		return a.Key < b.Key
	}
	return a.Incarnation.Less(b.Incarnation)
}

// ScanEntry is one live record as fsck sees it.
type ScanEntry struct {
	Key         string
	Tenant      string
	Incarnation api.ObjectIncarnation
	Size        int64
	CRC32C      uint32
	Bucket      uint64
	Offset      int64
}

// Scan lists every live record with its location, sorted like LiveRefs.
// Tombstoned records are not in it.
func (s *Store) Scan() []ScanEntry {
	s.mu.Lock()
	out := make([]ScanEntry, 0, len(s.idx.live))
	for k, loc := range s.idx.live {
		o := &s.buckets[loc.bucket].meta.Objects[loc.slot]
		out = append(out, ScanEntry{Key: k.key, Tenant: o.Tenant, Incarnation: k.inc, Size: loc.size,
			CRC32C: loc.crc, Bucket: loc.bucket, Offset: loc.offset})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		return refLess(api.ObjectRef{Key: out[i].Key, Incarnation: out[i].Incarnation},
			api.ObjectRef{Key: out[j].Key, Incarnation: out[j].Incarnation})
	})
	return out
}

// Tombstoned returns the refs of refs this store holds dead: tombstoned
// (or shadowed by a tombstone), or absent and at or below their key's
// tombstone floor. A live record is never among them, whatever the floor
// (an older complete incarnation stays live when a newer put of its key is
// revoked), and neither is a ref the store has no trace of: absence alone
// is what a lost disk or a reclaimed record past the floor's retention
// looks like, not evidence of a delete.
func (s *Store) Tombstoned(refs []api.ObjectRef) []api.ObjectRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []api.ObjectRef
	for _, r := range refs {
		k := objectKey{r.Key, r.Incarnation}
		if _, live := s.idx.live[k]; live {
			continue
		}
		if _, dead := s.idx.dead[k]; dead || covers(s.floors, k) {
			out = append(out, r)
		}
	}
	return out
}
