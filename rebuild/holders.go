package rebuild

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	"sexton/api"
	"sexton/transport"
)

// ScanHolder reads every record of the holder at ep through pool, a page
// at a time, each page within timeout.
func ScanHolder(pool *transport.Pool, ep string, timeout time.Duration) (Scan, error) {
	s := Scan{Endpoint: ep}
	req := api.HolderListRecordsRequest{Limit: api.MaxRecordsPage}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var page api.HolderListRecordsResponse
		err := pool.Call(ctx, ep, api.MethodHolderListRecords, &req, &page)
		cancel()
		if err != nil {
			return s, err
		}
		if s.Segment == "" {
			s.Segment, s.ClusterID, s.Pool, s.Capabilities = page.Segment, page.ClusterID, page.Pool, page.Capabilities
			s.KnownSegments = page.KnownSegments
		} else if page.Segment != s.Segment || page.ClusterID != s.ClusterID {
			return s, fmt.Errorf("the holder changed identity during the scan (segment %s → %s)", s.Segment, page.Segment)
		}
		s.Records = append(s.Records, page.Records...)
		if !page.More || len(page.Records) == 0 {
			return s, nil
		}
		last := page.Records[len(page.Records)-1]
		req.After = api.ObjectRef{Key: last.Key, Incarnation: last.Incarnation}
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// VerifyCopy reads a copy back through pool (the holder checks it against
// its record too) and compares it with the size and checksum the scan
// reported: what Options.Verify does for a rebuild over the network.
func VerifyCopy(pool *transport.Pool, key string, inc api.ObjectIncarnation, c Copy, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var resp api.HolderReadResponse
	if err := pool.Call(ctx, c.Endpoint, api.MethodHolderRead, &api.HolderReadRequest{Key: key, Incarnation: inc}, &resp); err != nil {
		return false
	}
	return int64(len(resp.Value)) == c.Size && crc32.Checksum(resp.Value, castagnoli) == c.CRC32C
}

// Batch is one RebuildAdopt entry's items.
type Batch struct {
	Objects []api.RebuildObject
	Deletes []api.RebuildDelete
}

// MaxBatchBytes keeps one entry near 1 MiB whatever the keys' lengths
// (the fsm bounds the item count, the frame bound the bytes).
const MaxBatchBytes = 1 << 20

// Batches cuts the plan into entries of at most n items and about
// MaxBatchBytes: the objects first, then the deletes.
func (p *Plan) Batches(n int) []Batch {
	var out []Batch
	cur, size := Batch{}, 0
	flush := func() {
		if len(cur.Objects)+len(cur.Deletes) > 0 {
			out = append(out, cur)
		}
		cur, size = Batch{}, 0
	}
	for _, o := range p.Objects {
		if len(cur.Objects)+len(cur.Deletes) >= n || size >= MaxBatchBytes {
			flush()
		}
		cur.Objects = append(cur.Objects, o)
		size += len(o.Key) + len(o.Tenant) + 64 + 80*len(o.Replicas)
	}
	for _, d := range p.Deletes {
		if len(cur.Objects)+len(cur.Deletes) >= n || size >= MaxBatchBytes {
			flush()
		}
		cur.Deletes = append(cur.Deletes, d)
		size += len(d.Key) + len(d.Tenant) + 128
	}
	flush()
	return out
}
