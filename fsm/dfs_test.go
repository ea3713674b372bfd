package fsm

import (
	"bytes"
	"errors"
	"testing"

	"sexton/api"
	"sexton/fsm/dfsalloc"
)

func dfsSettings(alloc string) DFSSettings {
	c := dfsalloc.DefaultConfig()
	c.Allocator = alloc
	c.ShardCount = 4
	c.ShardCapacity = 1 << 20
	c.BucketCapacity = 64 << 10
	c.MaxBucketCount = 4
	c.DeferredFreeSeconds = 1
	return SettingsOf(c)
}

func (h *harness) dfsConfigure(alloc string) {
	h.t.Helper()
	if r := h.apply(&DFSConfigure{Settings: dfsSettings(alloc), Now: h.now}).(*DFSResult); r.Err != nil {
		h.t.Fatalf("configure: %v", r.Err)
	}
}

func dfsReplica() []api.ReplicaDescriptor {
	return []api.ReplicaDescriptor{{Kind: api.ReplicaDFS}}
}

// dfsPut writes a COMPLETE DFS-only incarnation and returns its descriptor.
func (h *harness) dfsPut(key string, size int64) api.DFSDescriptor {
	h.t.Helper()
	s := h.apply(&PutStart{PutStartItem: PutStartItem{Key: key, Size: size, Replicas: dfsReplica()}, Now: h.now}).(*PutStartResult)
	if s.Err != nil {
		h.t.Fatalf("put start %q: %v", key, s.Err)
	}
	if len(s.Replicas) != 1 || s.Replicas[0].DFS == nil {
		h.t.Fatalf("put start %q: replicas %+v, want one allocated DFS replica", key, s.Replicas)
	}
	if e := h.putEnd(key, s.Incarnation); e.Err != nil {
		h.t.Fatalf("put end %q: %v", key, e.Err)
	}
	return *s.Replicas[0].DFS
}

func (h *harness) dfsStats() dfsalloc.Stats {
	h.t.Helper()
	s, ok := h.f.DFSStats()
	if !ok {
		h.t.Fatal("DFS not configured")
	}
	return s
}

// dfsMarked is the leader's duty: every queued removal record written,
// then DFSMarked, which frees the held ranges.
func (h *harness) dfsMarked() {
	h.t.Helper()
	if r := h.apply(&DFSMarked{Marks: h.f.DFSPendingMarks(MaxDFSMarks), Now: h.now}).(*DFSResult); r.Err != nil {
		h.t.Fatal(r.Err)
	}
}

func TestDFSPutRefusedWithoutConfiguration(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	r := h.apply(&PutStart{PutStartItem: PutStartItem{Key: "k", Size: 5, Replicas: dfsReplica()}, Now: h.now}).(*PutStartResult)
	if codeOf(r.Err) != api.CodeInvalidParams || h.f.Exists("k") {
		t.Fatalf("DFS put without configuration: %v", r.Err)
	}
	h.dfsConfigure(dfsalloc.KindShard)
	withDesc := []api.ReplicaDescriptor{{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{Allocator: "shard", Path: "dfs_shard_00.data", Size: 5, AlignedSize: 4096}}}
	r = h.apply(&PutStart{PutStartItem: PutStartItem{Key: "k", Size: 5, Replicas: withDesc}, Now: h.now}).(*PutStartResult)
	if codeOf(r.Err) != api.CodeInvalidParams {
		t.Fatalf("DFS put with a caller-chosen descriptor: %v, want INVALID_PARAMS", r.Err)
	}
}

func TestDFSPutGetRemoveShard(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindShard)
	d := h.dfsPut("obj", 5000)
	if d.Size != 5000 || d.AlignedSize != 8192 || d.Path != dfsalloc.ShardPath(dfsalloc.ShardOf("obj", 4), 4) {
		t.Fatalf("descriptor %+v", d)
	}
	v, err := h.f.Get("obj")
	if err != nil || len(v.Replicas) != 1 || *v.Replicas[0].DFS != d {
		t.Fatalf("get: %v %+v", err, v)
	}
	if s := h.dfsStats(); s.LiveEntries != 1 || s.LiveBytes != 8192 {
		t.Fatalf("stats after put: %+v", s)
	}
	if r := h.remove("obj"); r.Results[0].Err != nil || r.TasksCreated != 0 {
		t.Fatalf("remove: %+v", r)
	}
	// The range is held until its removal record is durable.
	if s := h.dfsStats(); s.LiveEntries != 1 || s.DeadBytes != 0 {
		t.Fatalf("stats after remove, before DFSMarked: live %d dead %d, want 1 and 0 (held)", s.LiveEntries, s.DeadBytes)
	}
	h.dfsMarked()
	if s := h.dfsStats(); s.LiveEntries != 0 || s.DeadBytes != 8192 {
		t.Fatalf("stats after remove: live %d dead %d, want 0 and 8192 (deferred)", s.LiveEntries, s.DeadBytes)
	}
}

func TestDFSBucketOverwriteAndRevokeNeverReuse(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindBucket)
	d1 := h.dfsPut("k", 100)
	d2 := h.dfsPut("k", 100) // overwrite: d1 becomes a tombstone
	s := h.apply(&PutStart{PutStartItem: PutStartItem{Key: "k", Size: 100, Replicas: dfsReplica()}, Now: h.now}).(*PutStartResult)
	if r := h.revoke("k", s.Incarnation); r.Err != nil {
		t.Fatal(r.Err)
	}
	h.dfsMarked()
	d4 := h.dfsPut("other", 1)
	if !(d1.Offset < d2.Offset && d2.Offset < s.Replicas[0].DFS.Offset && s.Replicas[0].DFS.Offset < d4.Offset) || d1.UnitID != d4.UnitID {
		t.Fatalf("offsets not strictly increasing in one bucket: %d %d %d %d", d1.Offset, d2.Offset, s.Replicas[0].DFS.Offset, d4.Offset)
	}
	st := h.dfsStats()
	if st.LiveEntries != 2 || st.DeadBytes != 2*4096 {
		t.Fatalf("stats: %d live entries, %d dead bytes; want 2 and 8192", st.LiveEntries, st.DeadBytes)
	}
	v, _ := h.f.Get("k")
	if *v.Replicas[0].DFS != d2 {
		t.Fatalf("k names %+v, want %+v", v.Replicas[0].DFS, d2)
	}
}

func TestDFSConfigureRefusesSharedChangeOnceUsed(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindBucket)
	h.dfsPut("k", 10)
	other := dfsSettings(dfsalloc.KindBucket)
	other.BucketCapacity *= 2
	if r := h.apply(&DFSConfigure{Settings: other, Now: h.now}).(*DFSResult); codeOf(r.Err) != api.CodeDFSMismatch {
		t.Fatalf("capacity change with data: %v, want DFS_CONFIG_MISMATCH", r.Err)
	}
	evict := dfsSettings(dfsalloc.KindBucket)
	evict.HighWatermark, evict.LowWatermark = 0.8, 0.5
	if r := h.apply(&DFSConfigure{Settings: evict, Now: h.now}).(*DFSResult); r.Err != nil {
		t.Fatalf("watermark change: %v", r.Err)
	}
	if got, _ := h.f.DFSSettings(); got != evict {
		t.Fatalf("settings %+v, want %+v", got, evict)
	}
	if s := h.dfsStats(); s.LiveEntries != 1 {
		t.Fatalf("watermark change lost the allocator state: %+v", s)
	}
}

func TestDFSSnapshotRestoreKeepsAllocator(t *testing.T) {
	for _, kind := range []string{dfsalloc.KindShard, dfsalloc.KindBucket} {
		t.Run(kind, func(t *testing.T) {
			h := newHarness(t, 100)
			h.epoch(7)
			h.dfsConfigure(kind)
			for i, k := range []string{"a", "b", "c", "d"} {
				h.dfsPut(k, int64(1000*(i+1)))
			}
			h.remove("b")
			g := restored(t, h.f)
			want := h.dfsStats()
			got, ok := g.DFSStats()
			if !ok || got.LiveEntries != want.LiveEntries || got.DeadBytes != want.DeadBytes || got.Used != want.Used {
				t.Fatalf("restored stats %+v, want %+v", got, want)
			}
			// Both allocate the same next range.
			h2 := &harness{t: t, f: g, index: h.index, term: h.term, now: h.now, cluster: h.cluster}
			if a, b := h.dfsPut("e", 10), h2.dfsPut("e", 10); a != b {
				t.Fatalf("next allocation differs after restore: %+v vs %+v", a, b)
			}
		})
	}
}

func TestDFSMarkLostDropsReplicas(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindBucket)
	d := h.dfsPut("k", 10)
	h.apply(&DFSFileOp{Kind: dfsalloc.FileCreate, Unit: d.UnitID, OK: true, Now: h.now})
	r := h.apply(&DFSMarkLost{Unit: d.UnitID, Now: h.now}).(*DFSResult)
	if r.Err != nil || len(r.Dropped) != 1 || r.ObjectsLost != 1 {
		t.Fatalf("mark lost: %+v", r)
	}
	if h.f.Exists("k") {
		t.Fatal("object of a lost bucket still visible")
	}
	if ops := h.f.DFSPendingFileOps(); len(ops) != 1 || ops[0].Kind != dfsalloc.FileDelete {
		t.Fatalf("pending ops after mark lost: %+v", ops)
	}
}

func TestDFSEvictionAndFailedDeleteStaysCharged(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindBucket)
	// 64 KiB buckets of 4 KiB entries: 16 fill one, the 17th seals it.
	for i := 0; i < 17; i++ {
		h.dfsPut(string(rune('a'+i)), 4096)
	}
	var keys []string
	for i := 0; i < 16; i++ {
		keys = append(keys, string(rune('a'+i)))
	}
	h.remove(keys...)
	if plan, _ := h.f.DFSPlanEviction(h.now, nil); len(plan.Candidates) != 0 {
		t.Fatalf("plan %+v before the removal records are durable; want none (the ranges are held)", plan)
	}
	h.dfsMarked()
	plan, _ := h.f.DFSPlanEviction(h.now, nil)
	if len(plan.Candidates) != 1 || plan.Candidates[0].Unit != 1 {
		t.Fatalf("plan %+v, want bucket 1 (sealed, dead)", plan)
	}
	if r := h.apply(&DFSEvict{Plan: plan, Now: h.now}).(*DFSResult); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := h.apply(&DFSFileOp{Kind: dfsalloc.FileDelete, Unit: 1, OK: false, Now: h.now}).(*DFSResult); r.Err != nil {
		t.Fatal(r.Err)
	}
	s := h.dfsStats()
	if s.ChargedBuckets != 2 || s.PendingDeletions != 1 {
		t.Fatalf("after a failed delete: %d charged, %d pending deletions; want 2 and 1", s.ChargedBuckets, s.PendingDeletions)
	}
	if r := h.apply(&DFSFileOp{Kind: dfsalloc.FileDelete, Unit: 1, OK: true, Now: h.now}).(*DFSResult); r.Err != nil {
		t.Fatal(r.Err)
	}
	if s := h.dfsStats(); s.ChargedBuckets != 1 || s.PendingDeletions != 0 {
		t.Fatalf("after the delete: %+v", s)
	}
	if !h.f.Exists(string(rune('a' + 16))) {
		t.Fatal("live object in the open bucket was lost")
	}
}

func TestDFSEvictionSkipsObjectWithPutInFlight(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	s := dfsSettings(dfsalloc.KindShard)
	s.ShardCount, s.ShardCapacity, s.HighWatermark, s.LowWatermark = 1, 8192, 0.5, 0.1
	h.apply(&DFSConfigure{Settings: s, Now: h.now})
	h.dfsPut("k", 4096)
	h.dfsPut("j", 4096)
	plan, _ := h.f.DFSPlanEviction(h.now, nil)
	if len(plan.Candidates) == 0 {
		t.Fatal("no eviction planned for a full shard")
	}
	// A new put of every planned key is now in flight: nothing may go.
	for _, c := range plan.Candidates {
		for _, e := range c.Entries {
			h.apply(&PutStart{PutStartItem: PutStartItem{Key: e.Key, Size: 1, Replicas: localReplicas()}, Now: h.now})
			h.apply(&MountLocalDisk{ClientID: "c", Segment: "s", Pool: "p", Capacity: 1 << 30, Endpoint: "e", Now: h.now})
			if r := h.apply(&PutStart{PutStartItem: PutStartItem{Key: e.Key, Size: 1, Replicas: localReplicas("s")}, Now: h.now}).(*PutStartResult); r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	r := h.apply(&DFSEvict{Plan: plan, Now: h.now}).(*DFSResult)
	if r.Err != nil || len(r.Dropped) != 0 || !h.f.Exists("k") || !h.f.Exists("j") {
		t.Fatalf("eviction with puts in flight: %+v", r)
	}
}

func TestDFSCommandsRoundTripAndBounds(t *testing.T) {
	ref := dfsalloc.EntryRef{Key: "k", Desc: api.DFSDescriptor{Allocator: "bucket", Path: dfsalloc.BucketPath(1), UnitID: 1, Offset: 4096, Size: 3, AlignedSize: 4096}}
	cmds := []Command{
		&DFSConfigure{Settings: dfsSettings(dfsalloc.KindShard), Now: 1},
		&DFSTouch{Refs: []dfsalloc.EntryRef{ref}, Now: 2},
		&DFSEvict{Plan: dfsalloc.EvictionPlan{Allocator: "bucket", Candidates: []dfsalloc.EvictionCandidate{{Unit: 1, Version: 3}}}, Now: 3},
		&DFSFileOp{Kind: dfsalloc.FileDelete, Unit: 1, OK: true, Now: 4},
		&DFSSetMaxBuckets{Max: 9, Now: 5},
		&DFSMarkLost{Unit: 2, Now: 6},
	}
	for _, c := range cmds {
		b, err := Encode(c)
		if err != nil {
			t.Fatalf("encode %s: %v", c.Type(), err)
		}
		d, err := Decode(b)
		if err != nil || d.Type() != c.Type() || c.Type().String() == "Unknown" {
			t.Fatalf("decode %s: %v", c.Type(), err)
		}
		b2, _ := Encode(d)
		if string(b) != string(b2) {
			t.Fatalf("%s does not round-trip", c.Type())
		}
	}
	long := ref
	long.Desc.Path = string(make([]byte, MaxDFSPathLen+1))
	if _, err := Encode(&DFSTouch{Refs: []dfsalloc.EntryRef{long}}); err == nil {
		t.Fatal("touch with an oversized path encoded")
	}
	many := make([]dfsalloc.EvictionCandidate, dfsalloc.MaxPlanCandidates+1)
	if _, err := Encode(&DFSEvict{Plan: dfsalloc.EvictionPlan{Candidates: many}}); err == nil {
		t.Fatal("oversized plan encoded")
	}
}

func TestDFSRestoreRefusesBadSectionAndKeepsState(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindBucket)
	h.dfsPut("k", 10)
	good := snapshotBytes(t, h.f)
	g := newWithCapacity(100)
	if err := g.Restore(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	// The same snapshot with a head naming an invalid alignment.
	bad := h.f.Snapshot()
	bad.dfs.Settings.Alignment = 3
	var buf bytes.Buffer
	if _, err := bad.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	bad.Release()
	if err := g.Restore(bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("restore of a bad dfs head: %v", err)
	}
	// Another allocator's settings than its records: refused too.
	other := h.f.Snapshot()
	other.dfs.Settings.Allocator = dfsalloc.KindShard
	buf.Reset()
	if _, err := other.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	other.Release()
	if err := g.Restore(bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("restore of shard settings over bucket records: %v", err)
	}
	if !bytes.Equal(snapshotBytes(t, g), good) {
		t.Fatal("a refused restore changed the state")
	}
}

// A PutEnd that supersedes a DFS incarnation while the queue of DFS
// removal records is full is refused with nothing changed, and goes
// through once there is room.
func TestDFSSupersedeRefusedWhileMarksQueueFull(t *testing.T) {
	h := newHarness(t, 100)
	h.epoch(7)
	h.dfsConfigure(dfsalloc.KindShard)
	first := h.dfsPut("k", 5)
	old := maxDFSMarks
	t.Cleanup(func() { maxDFSMarks = old })
	maxDFSMarks = 0
	s := h.apply(&PutStart{PutStartItem: PutStartItem{Key: "k", Size: 5, Replicas: dfsReplica()}, Now: h.now}).(*PutStartResult)
	if s.Err != nil {
		t.Fatalf("put start: %v", s.Err)
	}
	if e := h.putEnd("k", s.Incarnation); codeOf(e.Err) != api.CodeLocalDeleteRegistryFull {
		t.Fatalf("put end with the marks queue full: %v, want LOCAL_DELETE_REGISTRY_FULL", e.Err)
	}
	if o, err := h.f.Get("k"); err != nil || o.Replicas[0].DFS == nil || *o.Replicas[0].DFS != first {
		t.Fatalf("the refused put end changed the object: %+v, %v", o, err)
	}
	maxDFSMarks = old
	if e := h.putEnd("k", s.Incarnation); e.Err != nil {
		t.Fatalf("put end with room: %v", e.Err)
	}
}
