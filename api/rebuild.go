package api

import (
	"hash/fnv"
	"slices"
)

// Rebuild (`sexton operator rebuild`): a freshly bootstrapped cluster
// takes over the cluster id of one whose masters all lost their state and
// rebuilds its object table from the holders' records. The CLI scans the
// holders (HolderListRecords), merges per key and sends one RebuildBegin,
// then bounded RebuildAdopt calls; both are idempotent, so a retry after a
// leader change cannot act twice.
const (
	MethodRebuildBegin = "RebuildBegin"
	MethodRebuildAdopt = "RebuildAdopt"
	MethodRebuildClose = "RebuildClose"
)

// RebuildSegment is a scanned holder segment, registered (unmounted) so
// adopted replicas and delete tasks can name it before it mounts.
type RebuildSegment struct {
	Segment      SegmentID    `msgpack:"seg"`
	Pool         string       `msgpack:"pool"`
	Capabilities []Capability `msgpack:"caps"`
}

// RebuildObject is one key's winning incarnation and the segments holding
// a verified copy.
type RebuildObject struct {
	Key         string              `msgpack:"key"`
	Tenant      string              `msgpack:"tenant"`
	Size        int64               `msgpack:"size"`
	Incarnation ObjectIncarnation   `msgpack:"inc"`
	Replicas    []ReplicaDescriptor `msgpack:"replicas"`
}

// RebuildDelete is a live copy that must go (an older incarnation, one
// tombstoned elsewhere, or a copy that failed verification): a delete task
// on its segment.
type RebuildDelete struct {
	Segment     SegmentID         `msgpack:"seg"`
	Key         string            `msgpack:"key"`
	Tenant      string            `msgpack:"tenant"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
}

// RebuildBeginRequest starts (or resumes) the rebuild of cluster
// ClusterID and raises the incarnation base to IncFloor (the largest
// incarnation index the scan saw). Finish, sent after the last adoption,
// makes ClusterID this cluster's id, so the lost cluster's holders can
// mount it.
type RebuildBeginRequest struct {
	ClusterID uint64           `msgpack:"cluster"`
	IncFloor  uint64           `msgpack:"inc_floor"`
	Segments  []RebuildSegment `msgpack:"segs"`
	Finish    bool             `msgpack:"finish,omitempty"`
}

// RebuildBeginResponse is the state after the begin.
type RebuildBeginResponse struct {
	ClusterID     uint64 `msgpack:"cluster"`
	IncBase       uint64 `msgpack:"inc_base"`
	Repeat        bool   `msgpack:"repeat"`
	SegmentsAdded int    `msgpack:"segments_added"`
	Finished      bool   `msgpack:"finished"`
}

// RebuildAdoptRequest is one bounded batch of adoptions.
type RebuildAdoptRequest struct {
	ClusterID uint64          `msgpack:"cluster"`
	Objects   []RebuildObject `msgpack:"objs"`
	Deletes   []RebuildDelete `msgpack:"dels"`
}

// Outcomes of one RebuildAdopt item.
const (
	RebuildOutcomeFailed     = "failed"
	RebuildOutcomeAdopted    = "adopted"
	RebuildOutcomeAlready    = "already"
	RebuildOutcomeSuperseded = "superseded"
)

// RebuildItemResult answers one item, in request order.
type RebuildItemResult struct {
	Outcome string `msgpack:"outcome"`
	Tasks   int    `msgpack:"tasks,omitempty"`
	Err     *Error `msgpack:"err,omitempty"`
}

// RebuildAdoptResponse answers every item.
type RebuildAdoptResponse struct {
	Objects []RebuildItemResult `msgpack:"objs"`
	Deletes []RebuildItemResult `msgpack:"dels"`
}

// RebuildCloseRequest ends the adoption window of the finished rebuild of
// ClusterID (`sexton operator rebuild --close`): from then on a late
// holder of the lost cluster can only be retired or wiped.
type RebuildCloseRequest struct {
	ClusterID uint64 `msgpack:"cluster"`
}

// RebuildCloseResponse says whether the window was closed already.
type RebuildCloseResponse struct {
	Already bool `msgpack:"already"`
}

// RebuildStatus is a rebuilt cluster's rebuild state.
type RebuildStatus struct {
	// Cluster is the lost cluster's id the rebuild adopts.
	Cluster  uint64 `msgpack:"cluster" json:"cluster_id"`
	Finished bool   `msgpack:"finished" json:"finished"`
	// Closed: `operator rebuild --close` ended the adoption window.
	Closed bool `msgpack:"closed" json:"closed"`
	// RemovedKeys counts the keys removed since the rebuild began that an
	// adoption may not bring back; Overflowed says there were too many
	// to remember and every adoption of a key absent from the table is
	// refused.
	RemovedKeys int  `msgpack:"removed" json:"removed_keys"`
	Overflowed  bool `msgpack:"overflowed" json:"overflowed"`
	// IncBase is the rebuilt cluster's incarnation base: the lost
	// cluster's copies are at or below it, this cluster's own above it.
	IncBase uint64 `msgpack:"inc_base,omitempty" json:"incarnation_base"`
}

// MaxRebuildSegmentsKnown bounds the segment ids a holder records and
// reports (HolderListRecordsResponse.KnownSegments): a rebuild registers
// at most this many.
const MaxRebuildSegmentsKnown = 4096

// SegmentSetDigest is a digest of a set of segment ids (order and
// duplicates do not matter): a holder sends the one of the set it has
// recorded, and the master sends the set again only when its own differs.
func SegmentSetDigest(ids []SegmentID) uint64 {
	sorted := append([]SegmentID(nil), ids...)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	h := fnv.New64a()
	for _, id := range sorted {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	if d := h.Sum64(); d != 0 {
		return d
	}
	return 1 // zero means "none recorded"
}
