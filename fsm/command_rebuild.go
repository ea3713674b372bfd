package fsm

import (
	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/internal/enum"
)

// Rebuild (docs/DESIGN.md §11): a freshly bootstrapped cluster takes
// over the cluster id of one whose masters all lost their state, and
// rebuilds its object table from what the holders report. The operator's
// CLI scans the holders, merges per key and sends RebuildBegin once, then
// bounded RebuildAdopt entries. Both are idempotent, so a leader change or
// a restarted CLI simply sends them again.
const (
	CmdRebuildBegin CommandType = 20
	CmdRebuildAdopt CommandType = 21
	CmdRebuildClose CommandType = 26
)

// Schema versions of the rebuild commands.
const (
	RebuildBeginV1 uint8 = 1
	RebuildAdoptV1 uint8 = 1
	RebuildCloseV1 uint8 = 1
)

// Bounds of the rebuild commands.
const (
	// MaxRebuildSegments bounds the segments one RebuildBegin registers.
	MaxRebuildSegments = 4096
	// MaxRebuildItems bounds the objects plus deletes of one RebuildAdopt,
	// so Apply's work per entry is bounded; the request frame bound (4 MiB
	// control frames) bounds its bytes, and the CLI keeps a batch near
	// 1 MiB.
	MaxRebuildItems = 1024
)

// RebuildSegment is a holder segment the rebuild scanned: registered
// (unmounted, epoch 0) so adopted replicas and delete tasks can name it
// before its holder mounts the rebuilt cluster.
type RebuildSegment = api.RebuildSegment

// RebuildBegin starts (and, with Finish, completes) a rebuild of the lost
// cluster ClusterID. It raises the incarnation base to IncFloor, the
// largest incarnation Low the scan saw, so every incarnation the rebuilt
// cluster issues is above every one it saw, and registers the scanned
// segments.
//
// The first one is accepted only while the state has no object and no
// task (a freshly bootstrapped cluster); it records ClusterID as the
// cluster being rebuilt. Later ones must name the same cluster (a resumed
// rebuild): before the finish they raise the base if IncFloor is larger;
// once the cluster serves the rebuilt table the base stays (a copy above
// it is this cluster's own); they register segments not yet known. Finish, sent after the last RebuildAdopt, makes
// ClusterID the cluster id: only then can the lost cluster's holders
// mount (their markers name it) and reconcile, so none of them
// reconciles against a half-built table.
type RebuildBegin struct {
	V         uint8            `msgpack:"v"`
	ClusterID uint64           `msgpack:"cluster"`
	IncFloor  uint64           `msgpack:"inc_floor"`
	Segments  []RebuildSegment `msgpack:"segs"`
	Finish    bool             `msgpack:"finish,omitempty"`
	Now       int64            `msgpack:"now"`
}

// RebuildBeginResult answers RebuildBegin.
type RebuildBeginResult struct {
	Err       *api.Error
	ClusterID uint64
	// IncBase is the base in force after the entry.
	IncBase uint64
	// Repeat says the state had already begun this rebuild.
	Repeat bool
	// Finished says the cluster id is now the rebuilt one.
	Finished bool
	// SegmentsAdded counts segments the entry registered.
	SegmentsAdded int
}

// RebuildObject is one key's winning incarnation, with the replicas that
// hold a verified copy of it.
type RebuildObject = api.RebuildObject

// RebuildDelete is a live copy that must go: an older incarnation of its
// key, an incarnation tombstoned on another holder, or a copy that failed
// verification. It becomes a delete task on its segment.
type RebuildDelete = api.RebuildDelete

// RebuildAdopt adds objects and delete tasks to a rebuilt cluster's
// state. ClusterID must be the one the RebuildBegin named. Results are
// per item, in order; there is no entry-wide transaction, and applying the
// same entry twice changes nothing the second time.
type RebuildAdopt struct {
	V         uint8           `msgpack:"v"`
	ClusterID uint64          `msgpack:"cluster"`
	Objects   []RebuildObject `msgpack:"objs"`
	Deletes   []RebuildDelete `msgpack:"dels"`
	Now       int64           `msgpack:"now"`
}

// RebuildOutcome is what became of one RebuildAdopt item.
type RebuildOutcome uint8

const (
	// RebuildFailed: refused, nothing changed (Err says why).
	RebuildFailed RebuildOutcome = iota
	// RebuildAdopted: the object is now the key's COMPLETE incarnation (a
	// COMPLETE incarnation it replaced, older, got delete tasks), or the
	// delete task was created.
	RebuildAdopted
	// RebuildAlready: the state already had it (the object, with any new
	// replicas merged in, or the task): a repeated entry.
	RebuildAlready
	// RebuildSuperseded: the key already has a newer incarnation (or a put
	// in progress), so the object's copies got delete tasks instead.
	RebuildSuperseded
)

var rebuildOutcomeNames = []string{
	RebuildFailed:     api.RebuildOutcomeFailed,
	RebuildAdopted:    api.RebuildOutcomeAdopted,
	RebuildAlready:    api.RebuildOutcomeAlready,
	RebuildSuperseded: api.RebuildOutcomeSuperseded,
}

func (o RebuildOutcome) String() string {
	return enum.Name(rebuildOutcomeNames, o, api.RebuildOutcomeFailed)
}

// RebuildItemResult answers one item of RebuildAdopt.
type RebuildItemResult struct {
	Outcome RebuildOutcome
	// Tasks counts the delete tasks the item created.
	Tasks int
	Err   *api.Error
}

// RebuildAdoptResult answers RebuildAdopt. Err is set only when the whole
// entry was refused (no rebuild begun, another cluster id); then no item
// was looked at.
type RebuildAdoptResult struct {
	Err     *api.Error
	Objects []RebuildItemResult
	Deletes []RebuildItemResult
}

func boundsRebuildBegin(c *RebuildBegin, b bounder) error {
	if len(c.Segments) > MaxRebuildSegments {
		return b.bad("%d segments exceed %d", len(c.Segments), MaxRebuildSegments)
	}
	for _, s := range c.Segments {
		if len(s.Capabilities) > api.MaxCapabilities {
			return b.bad("%d capabilities exceed %d", len(s.Capabilities), api.MaxCapabilities)
		}
		for _, cp := range s.Capabilities {
			if err := b.idLen("capability", string(cp)); err != nil {
				return err
			}
		}
		if err := firstErr(b.idLen("segment id", string(s.Segment)), b.idLen("pool", s.Pool)); err != nil {
			return err
		}
	}
	return nil
}

func boundsRebuildAdopt(c *RebuildAdopt, b bounder) error {
	if n := len(c.Objects) + len(c.Deletes); n > MaxRebuildItems {
		return b.bad("%d items exceed %d", n, MaxRebuildItems)
	}
	for _, o := range c.Objects {
		if len(o.Replicas) > api.MaxReplicas {
			return b.bad("%d replicas exceed %d", len(o.Replicas), api.MaxReplicas)
		}
		for _, r := range o.Replicas {
			if r.DFS != nil {
				if err := entryRefsBounded(b, []dfsalloc.EntryRef{{Key: o.Key, Desc: *r.DFS}}); err != nil {
					return err
				}
			}
			if err := firstErr(b.idLen("segment id", string(r.Segment)), b.idLen("pool", r.Pool)); err != nil {
				return err
			}
		}
		if err := b.keyLen("key", o.Key); err != nil {
			return err
		}
		if len(o.Tenant) > api.MaxTenantLen {
			return b.bad("tenant of %d bytes exceeds %d", len(o.Tenant), api.MaxTenantLen)
		}
	}
	for _, d := range c.Deletes {
		if err := firstErr(b.keyLen("key", d.Key), b.idLen("segment id", string(d.Segment))); err != nil {
			return err
		}
		if len(d.Tenant) > api.MaxTenantLen {
			return b.bad("tenant of %d bytes exceeds %d", len(d.Tenant), api.MaxTenantLen)
		}
	}
	return nil
}

// RebuildClose (`operator rebuild --close`) ends the adoption window of a
// finished rebuild of ClusterID: the removal memory is dropped, and from
// then on no begin or adoption is accepted and a late holder of the lost
// cluster can only be retired or wiped.
type RebuildClose struct {
	V         uint8  `msgpack:"v"`
	ClusterID uint64 `msgpack:"cluster"`
	Now       int64  `msgpack:"now"`
}

// RebuildCloseResult answers RebuildClose; Already says the window was
// closed before.
type RebuildCloseResult struct {
	Err     *api.Error
	Already bool
}
