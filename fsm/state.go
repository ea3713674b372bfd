package fsm

import (
	"encoding/binary"
	"strings"

	"sexton/api"
	"sexton/snapshot"
)

// maxAudit is how many RetireStorage audit entries the state keeps.
const maxAudit = 100

// maxInterned bounds the string interner: tenants come from clients, so
// past this many distinct strings new ones are simply not shared.
const maxInterned = 1 << 16

// segment is one LOCAL_DISK segment's mount state. Mutated in place by
// Apply; a snapshot view copies it by value.
type segment struct {
	id       api.SegmentID
	client   string
	process  string // the owner's process id (MountLocalDisk v2); "" for v1 mounts
	pool     string
	capacity int64
	caps     []api.Capability // sorted, deduplicated; replaced, never mutated
	endpoint string
	epoch    uint64
	mounted  bool
	retired  bool
	// rebuildMember says the segment belongs to a rebuilt cluster: a
	// RebuildBegin registered it (its holder was scanned), or it first
	// mounted with a never-bound marker. A holder whose marker names the
	// lost cluster mounts only a member segment (apply_mount.go).
	rebuildMember bool
}

// capable reports whether the segment advertises durable tombstones, the
// only case in which the master creates delete tasks for it.
func (s *segment) capable() bool { return api.HasCapability(s.caps, api.CapObjectTombstoneV1) }

func (s *segment) info(pending int) api.SegmentInfo {
	return api.SegmentInfo{
		ID: s.id, ClientID: s.client, Pool: s.pool, Capacity: s.capacity,
		Capabilities: append([]api.Capability(nil), s.caps...), Endpoint: s.endpoint,
		MountEpoch: s.epoch, Mounted: s.mounted, Retired: s.retired, PendingTasks: pending,
	}
}

// state is everything Apply changes.
type state struct {
	clusterID    uint64
	masterEpoch  uint64
	nextTaskID   uint64
	leaderID     string
	leaderAddr   string
	appliedIndex uint64
	appliedTerm  uint64
	lastNow      int64

	objects  *objectTable
	segments map[api.SegmentID]*segment
	clients  map[string]api.SegmentID // client id → the one segment it has mounted
	reg      *registry
	audit    []snapshot.AuditEntry

	strs    map[string]string
	attrs   map[string]*objectAttrs // interned object attributes (internAttrs)
	planBuf taskPlan                // scratch for planTasks, reused across keys

	dfs *dfsState // nil until the cluster's first DFSConfigure

	// settings are the replicated settings as set through the log (zero
	// fields mean the default); settingsSet says a Settings entry was
	// ever applied (or restored). Before that, settings are the legacy
	// settings the state applies under (Config.Legacy, or a snapshot's
	// legacy_settings).
	settings    api.Settings
	settingsSet bool
	// grantKey signs write grants; set once by an EpochBegin.
	grantKey []byte
	// sess is the client session table (exactly-once answers).
	sess *sessionTable
	// jobs are the bulk-delete jobs (prefix deletes).
	jobs jobTable
	// incBase is added to a PutStart's Raft index to make its
	// incarnation's Low: zero until a RebuildBegin raises it above every
	// incarnation the holders of the lost cluster hold (apply_rebuild.go).
	incBase uint64
	// rebuildBase is the incarnation base the rebuilt table was first
	// served under: the lost cluster's copies are at or below it, this
	// cluster's own above it. incBase moves on with every reserved block;
	// this does not, so a rerun can still tell the two apart.
	rebuildBase uint64
	// blocks are the live reserved incarnation blocks of one-commit puts,
	// ascending (apply_commit.go); expired ones are dropped.
	blocks []incBlock
	// rebuildCluster is the lost cluster's id a rebuild adopts: set by the
	// first RebuildBegin, made the cluster id by the finishing one.
	rebuildCluster uint64
	// rebuildClosed says `operator rebuild --close` ended the adoption
	// window: no more adoption, late holders can only be retired.
	rebuildClosed bool
	// rebuildRemoved is the digest of every key dropped from the table
	// since the rebuild began, while the window is open (rebuild_window.go);
	// rebuildOverflow says it outgrew maxRebuildRemoved and was dropped.
	rebuildRemoved  map[removedDigest]struct{}
	rebuildOverflow bool

	// segGen counts the Applies that may have changed a segment's mount
	// state, owner, pool or capacity (mount, unmount, retire, a rebuild's
	// begin): SegmentsVersion, for the leader's placement cache. Derived,
	// never in a snapshot.
	segGen uint64

	// wake collects, while an entry applies, the segments whose long
	// polls it concerns (wake.go). Scratch, not state: never in a
	// snapshot, reset by every Apply.
	wake wakeSet
}

// incarnationAt is the incarnation a PutStart (or PutStartBatch) applied
// at index creates. Low grows with the index, so a key's incarnations
// still increase in apply order, and after a rebuild every new one is
// above every one the rebuild saw.
func (st *state) incarnationAt(index uint64) api.ObjectIncarnation {
	return api.ObjectIncarnation{High: st.clusterID, Low: st.incBase + index}
}

// newState returns an empty state under the given settings (zero fields:
// defaults).
func newState(settings api.Settings, set bool) *state {
	st := newStateWithCapacity(withDefaults(settings).RegistryCapacity)
	st.settings, st.settingsSet = settings, set
	return st
}

func newStateWithCapacity(capacity int) *state {
	st := &state{
		nextTaskID: 1,
		objects:    newObjectTable(),
		segments:   make(map[api.SegmentID]*segment),
		clients:    make(map[string]api.SegmentID),
		reg:        nil, // set below: it shares the object table
		strs:       make(map[string]string),
		attrs:      make(map[string]*objectAttrs),
		sess:       newSessionTable(),
	}
	st.reg = newRegistry(capacity, st.objects, &st.wake)
	return st
}

// intern returns a shared copy of s so millions of objects naming the same
// tenant, pool or segment keep one string.
func (st *state) intern(s string) string {
	if s == "" {
		return ""
	}
	if x, ok := st.strs[s]; ok {
		return x
	}
	if len(st.strs) >= maxInterned {
		return s
	}
	s = strings.Clone(s)
	st.strs[s] = s
	return s
}

// newObject builds an incarnation of a put (or of an adopted or restored
// object) with its attributes interned. An empty tenant is the default
// tenant, as in every command and snapshot record that carries one.
func (st *state) newObject(tenant, putID string, replicas []api.ReplicaDescriptor, size, created int64, inc api.ObjectIncarnation) *object {
	o := st.makeObject(tenant, putID, replicas, size, created, inc)
	return &o
}

// makeObject is newObject by value, for an incarnation stored straight
// into the table's tree.
func (st *state) makeObject(tenant, putID string, replicas []api.ReplicaDescriptor, size, created int64, inc api.ObjectIncarnation) object {
	if tenant == "" {
		tenant = api.DefaultTenant
	}
	return object{inc: inc, size: size, created: created, attrs: withPutID(st.internAttrs(tenant, replicas), putID)}
}

// withPutID returns a with put id id: a itself for none, else a copy of
// its own (the tenant and the replica slice, both immutable, still
// shared), so the id is not a field every object pays for.
func withPutID(a *objectAttrs, id string) *objectAttrs {
	if id == "" {
		return a
	}
	cp := *a
	cp.putID = id
	return &cp
}

// withReplicas returns a copy of o placed on rs instead.
func (st *state) withReplicas(o *object, rs []api.ReplicaDescriptor) *object {
	cp := *o
	cp.attrs = withPutID(st.internAttrs(o.tenant(), rs), o.putID())
	return &cp
}

// internAttrs returns immutable attributes equal to (tenant, rs), with the
// strings interned. Those whose replica list has no DFS descriptor (the
// common LOCAL_DISK case) are shared between objects, so a 1-replica
// object costs no attrs or slice of its own; a DFS descriptor is one
// object's alone, so such attrs are built per object. The lookup key is
// built in a stack buffer, so a hit allocates nothing. Sharing saves
// memory and nothing else: equal attrs read the same shared or not, so
// the table (which a restored state starts afresh, and which stops
// growing at maxInterned) never shows in a result or a snapshot.
func (st *state) internAttrs(tenant string, rs []api.ReplicaDescriptor) *objectAttrs {
	var buf [256]byte
	kb, shareable := appendAttrsKey(buf[:0], tenant, rs)
	if shareable {
		if a, ok := st.attrs[string(kb)]; ok {
			return a
		}
	}
	a := &objectAttrs{tenant: st.intern(tenant)}
	if len(rs) > 0 {
		a.replicas = make([]api.ReplicaDescriptor, len(rs))
	}
	for i, r := range rs {
		a.replicas[i] = api.ReplicaDescriptor{Kind: r.Kind, Segment: api.SegmentID(st.intern(string(r.Segment))), Pool: st.intern(r.Pool)}
		if r.DFS != nil {
			d := *r.DFS
			d.Allocator = st.intern(d.Allocator)
			a.replicas[i].DFS = &d
		}
	}
	if shareable && len(st.attrs) < maxInterned {
		st.attrs[string(kb)] = a
	}
	return a
}

// appendAttrsKey appends internAttrs' lookup key for (tenant, rs) to kb,
// and reports whether such attrs may be shared (no DFS descriptor). Every
// string is length-prefixed: names are not restricted to any alphabet, and
// with separators instead a NUL inside a pool name could make two
// different placements one key.
func appendAttrsKey(kb []byte, tenant string, rs []api.ReplicaDescriptor) ([]byte, bool) {
	kb = appendKeyString(kb, tenant)
	for _, r := range rs {
		if r.DFS != nil {
			return kb, false
		}
		kb = append(kb, byte(r.Kind))
		kb = appendKeyString(kb, string(r.Segment))
		kb = appendKeyString(kb, r.Pool)
	}
	return kb, true
}

func appendKeyString(kb []byte, s string) []byte {
	return append(binary.AppendUvarint(kb, uint64(len(s))), s...)
}

// newTaskID draws the next task id.
func (st *state) newTaskID() uint64 {
	id := st.nextTaskID
	st.nextTaskID++
	return id
}

// taskPlan is the set of new tasks one key needs: computed first
// (reservation), created only if all of them fit.
type taskPlan []taskIdent

// planTasks lists the tasks needed to delete obj's LOCAL_DISK replicas:
// one per replica on a known segment that advertises OBJECT_TOMBSTONE_V1 and
// has no such task yet. Replicas on segments without the capability get no
// task: their bytes are reclaimed only by the holder's own reconciliation.
// The plan lives in a scratch buffer valid until the next call.
func (st *state) planTasks(key string, e entry, obj *object) taskPlan {
	plan := st.planBuf[:0]
	defer func() { st.planBuf = plan[:0] }()
	for _, r := range obj.replicas() {
		if r.Kind != api.ReplicaLocalDisk {
			continue
		}
		seg := st.segments[r.Segment]
		if seg == nil || seg.retired || !seg.capable() {
			continue
		}
		id := taskIdent{seg: seg.id, key: key, inc: obj.inc}
		if hasIn(e.tasks, id) || plan.contains(id) {
			continue // a duplicate costs nothing
		}
		plan = append(plan, id)
	}
	return plan
}

// planFitting is planTasks, refused (LOCAL_DELETE_REGISTRY_FULL) when
// the tasks do not fit the registry.
func (st *state) planFitting(key string, e entry, obj *object) (taskPlan, *api.Error) {
	plan := st.planTasks(key, e, obj)
	if !st.reg.fits(len(plan)) {
		return nil, registryFull(key, len(plan), st.reg.len(), st.reg.capacity)
	}
	return plan, nil
}

func (p taskPlan) contains(id taskIdent) bool {
	for _, x := range p {
		if x == id {
			return true
		}
	}
	return false
}

// createTasks stores the planned tasks, linking them into e (which the
// caller then stores); the caller has checked they fit. The segments of
// the new tasks that are fetchable at once are listed for waking; one
// withheld behind an older incarnation's task (invariant 7) is listed
// when that task goes (registry.drop).
func (st *state) createTasks(e *entry, plan taskPlan, tenant string, now int64) int {
	for _, id := range plan {
		t := &task{id: st.newTaskID(), seg: id.seg, key: id.key, tenant: tenant, inc: id.inc, created: now}
		st.reg.index(t)
		linkTask(e, t)
		// Fetchable now (nothing older pending): its holder's poll may
		// take it. A later task of the same plan can only be of the same
		// incarnation (a plan deletes one incarnation), so none withholds
		// an earlier one.
		if !olderIn(e.tasks, t.inc) {
			st.wake.segment(t.seg)
		}
	}
	return len(plan)
}

func registryFull(key string, need, used, capacity int) *api.Error {
	return api.Errorf(api.CodeLocalDeleteRegistryFull, "key %q needs %d task slots, registry holds %d of %d", key, need, used, capacity)
}
