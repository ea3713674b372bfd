package holder

import (
	"context"
	"sort"
	"sync"
	"time"

	"sexton/api"
)

// Records lists every (key, incarnation) this store keeps, live and dead,
// sorted like LiveRefs: a live record with its size and checksum; a
// tombstoned one (its record still in some metadata, or named by its
// key's tombstone floor after GC reclaimed it) with Tombstoned set. It is
// what `operator rebuild` merges into a new object table, so a dead
// incarnation is reported dead even where another copy of it would read
// as live: the rebuild must never bring it back. A dead incarnation every
// record of whose death here is an eviction is reported Evicted too, so
// the rebuild may adopt it from another holder's live copy.
func (s *Store) Records() []api.HolderRecord {
	s.mu.Lock()
	recs := make(map[objectKey]api.HolderRecord, len(s.idx.live)+len(s.idx.dead))
	for k, loc := range s.idx.live {
		o := &s.buckets[loc.bucket].meta.Objects[loc.slot]
		recs[k] = api.HolderRecord{Key: k.key, Tenant: o.Tenant, Incarnation: k.inc, Size: loc.size, CRC32C: loc.crc}
	}
	for k := range s.idx.dead {
		recs[k] = api.HolderRecord{Key: k.key, Incarnation: k.inc, Tombstoned: true, Evicted: s.diedByEvictionLocked(k, nil)}
	}
	for key, f := range s.floors {
		k := objectKey{key, f.inc}
		recs[k] = api.HolderRecord{Key: key, Incarnation: f.inc, Tombstoned: true, Evicted: s.diedByEvictionLocked(k, nil)}
	}
	s.mu.Unlock()
	out := make([]api.HolderRecord, 0, len(recs))
	for _, r := range recs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return recordLess(&out[i], &out[j]) })
	return out
}

func recordLess(a, b *api.HolderRecord) bool {
	if a.Key != b.Key {
		return a.Key < b.Key
	}
	return a.Incarnation.Less(b.Incarnation)
}

// recordsCache keeps the sorted record list of the scan in progress, so
// paging through a million records does not sort them once per page. A
// scan's first page (After zero) always builds a fresh list; later pages
// reuse it while it is younger than recordsCacheTTL. A page of a list
// that changed since is what any paged scan of a live directory sees;
// a rebuild scans holders that follow no cluster, so nothing changes.
type recordsCache struct {
	mu    sync.Mutex
	built time.Time
	recs  []api.HolderRecord
}

const recordsCacheTTL = 30 * time.Second

// maxRecordsPageBytes keeps a page well inside a control frame whatever
// the keys' lengths (api.MaxRecordsPage records of the longest keys would
// not fit).
const maxRecordsPageBytes = 1 << 20

func (c *recordsCache) get(s *Store, fresh bool) []api.HolderRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fresh || c.recs == nil || time.Since(c.built) > recordsCacheTTL {
		c.recs, c.built = s.Records(), time.Now()
	}
	return c.recs
}

// handleListRecords answers one page of Records with the holder's
// identity. It needs no mount: a rebuild scans holders whose cluster's
// masters are gone.
func (s *Service) handleListRecords(_ context.Context, req *api.HolderListRecordsRequest) (*api.HolderListRecordsResponse, error) {
	limit := req.Limit
	if limit <= 0 || limit > api.MaxRecordsPage {
		limit = api.MaxRecordsPage
	}
	recs := s.records.get(s.store, req.After == (api.ObjectRef{}))
	after := api.HolderRecord{Key: req.After.Key, Incarnation: req.After.Incarnation}
	i := sort.Search(len(recs), func(i int) bool { return recordLess(&after, &recs[i]) })
	end, bytes := i, 0
	for end < len(recs) && end-i < limit && (end == i || bytes < maxRecordsPageBytes) {
		bytes += len(recs[end].Key) + len(recs[end].Tenant) + 64
		end++
	}
	id := s.store.Identity()
	resp := &api.HolderListRecordsResponse{
		Segment: id.SegmentID, ClusterID: id.ClusterID, Pool: s.cfg.Pool,
		Capabilities: []api.Capability{api.CapObjectTombstoneV1},
		Records:      recs[i:end:end], More: end < len(recs),
	}
	if req.After == (api.ObjectRef{}) {
		resp.KnownSegments = s.store.KnownSegments()
	}
	return resp, nil
}
