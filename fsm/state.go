package fsm

import (
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

	strs     map[string]string
	replicas map[string][]api.ReplicaDescriptor
	planBuf  taskPlan // scratch for planTasks, reused across keys

	dfs *dfsState // nil until the cluster's first DFSConfigure

	// settings are the replicated settings as set through the log (zero
	// fields mean the default); settingsSet says a Settings entry was
	// ever applied (or restored).
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
	// rebuildCluster is the lost cluster's id a rebuild adopts: set by the
	// first RebuildBegin, made the cluster id by the finishing one.
	rebuildCluster uint64

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
		replicas:   make(map[string][]api.ReplicaDescriptor),
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

// internReplicas returns an immutable replica list equal to rs. Lists
// without DFS descriptors (the common LOCAL_DISK case) are shared between
// objects, so a 1-replica object costs no slice of its own. The lookup key
// is built on the stack, so a hit allocates nothing.
func (st *state) internReplicas(rs []api.ReplicaDescriptor) []api.ReplicaDescriptor {
	if len(rs) == 0 {
		return nil
	}
	shareable := true
	var buf [256]byte
	kb := buf[:0]
	for _, r := range rs {
		if r.DFS != nil {
			shareable = false
			break
		}
		kb = append(kb, byte(r.Kind))
		kb = append(kb, r.Segment...)
		kb = append(kb, 0)
		kb = append(kb, r.Pool...)
		kb = append(kb, 0)
	}
	if shareable {
		if x, ok := st.replicas[string(kb)]; ok {
			return x
		}
	}
	out := make([]api.ReplicaDescriptor, len(rs))
	for i, r := range rs {
		out[i] = api.ReplicaDescriptor{Kind: r.Kind, Segment: api.SegmentID(st.intern(string(r.Segment))), Pool: st.intern(r.Pool)}
		if r.DFS != nil {
			d := *r.DFS
			d.Allocator = st.intern(d.Allocator)
			out[i].DFS = &d
		}
	}
	if shareable && len(st.replicas) < maxInterned {
		st.replicas[string(kb)] = out
	}
	return out
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
	for _, r := range obj.replicas {
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
