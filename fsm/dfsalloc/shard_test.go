package dfsalloc

import (
	"errors"
	"hash/fnv"
	"testing"

	"sexton/api"
)

func TestShardPathsAndStableHash(t *testing.T) {
	for _, tc := range []struct {
		n, count int
		want     string
	}{
		{0, 1, "dfs_shard_00.data"}, {7, 64, "dfs_shard_07.data"}, {99, 100, "dfs_shard_99.data"},
		{7, 128, "dfs_shard_007.data"}, {1000, 1001, "dfs_shard_1000.data"},
	} {
		if got := ShardPath(tc.n, tc.count); got != tc.want {
			t.Errorf("ShardPath(%d, %d) = %q, want %q", tc.n, tc.count, got, tc.want)
		}
	}
	for _, key := range []string{"a", "object/17", "ключ", ""} {
		h := fnv.New64a()
		h.Write([]byte(key))
		if got, want := ShardOf(key, 64), int(h.Sum64()%64); got != want {
			t.Errorf("ShardOf(%q) = %d, want FNV-1a 64 mod 64 = %d", key, got, want)
		}
	}
	// Golden values: the hash is part of the on-disk contract.
	if a, b, c := ShardOf("object/17", 64), ShardOf("a", 64), ShardOf("k", 1000); a != 23 || b != 12 || c != 106 {
		t.Fatalf("ShardOf changed: %d %d %d, want 23 12 106", a, b, c)
	}
}

// oneShard is a single 16-unit shard, so every key lands in it.
func oneShard(t *testing.T) Allocator { return mustNew(t, shardConfig(1, 16*unit4k)) }

func TestShardAlignsAndPlacesByHash(t *testing.T) {
	a := mustNew(t, shardConfig(8, 16*unit4k))
	ds := mustAlloc(t, a, t0, req("x", 1), req("y", 5000), req("z", 0))
	for i, d := range ds {
		key := []string{"x", "y", "z"}[i]
		if d.Allocator != KindShard || d.UnitID != uint64(ShardOf(key, 8)) || d.Path != ShardPath(ShardOf(key, 8), 8) ||
			d.Offset%unit4k != 0 || d.AlignedSize%unit4k != 0 || d.AlignedSize < d.Size || d.AlignedSize == 0 {
			t.Fatalf("descriptor %+v for %q", d, key)
		}
	}
	if ds[1].AlignedSize != 2*unit4k {
		t.Fatalf("5000 bytes took %d, want 8192", ds[1].AlignedSize)
	}
}

func TestShardDeferredFreeIsHonoured(t *testing.T) {
	a := oneShard(t)
	ds := mustAlloc(t, a, t0, req("a", unit4k), req("b", unit4k))
	must(t, a.Commit("a", ds[0], t0))
	must(t, a.Free("a", ds[0], t0))
	// 29 s later the range of "a" is still deferred: a new entry goes after "b".
	c := mustAlloc(t, a, t0+29*sec, req("c", unit4k))[0]
	if c.Offset == ds[0].Offset {
		t.Fatalf("range freed at t reused at t+29s")
	}
	if c.Offset != 2*unit4k {
		t.Fatalf("c at %d, want 8192", c.Offset)
	}
	if u := unit(t, a, 0); u.DeadBytes != unit4k {
		t.Fatalf("deferred bytes %d, want 4096", u.DeadBytes)
	}
	// 31 s later it is free again, and first fit hands it out.
	d := mustAlloc(t, a, t0+31*sec, req("d", unit4k))[0]
	if d.Offset != ds[0].Offset {
		t.Fatalf("d at %d, want the released range at %d", d.Offset, ds[0].Offset)
	}
	if u := unit(t, a, 0); u.DeadBytes != 0 || u.LiveEntries != 3 {
		t.Fatalf("stats %+v after the release", u)
	}
}

func TestShardDeferredRangeIsNotFreeSpace(t *testing.T) {
	a := mustNew(t, shardConfig(1, 2*unit4k))
	ds := mustAlloc(t, a, t0, req("a", unit4k), req("b", unit4k))
	must(t, a.Free("a", ds[0], t0))
	if _, err := a.Allocate([]Request{req("c", 1)}, t0+29*sec); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("allocation into a full shard with only deferred space: %v, want NO_SPACE", err)
	}
	if d := mustAlloc(t, a, t0+30*sec, req("c", 1))[0]; d.Offset != 0 {
		t.Fatalf("c at %d, want 0", d.Offset)
	}
}

func TestShardFailedBatchReturnsItsRanges(t *testing.T) {
	a := oneShard(t)
	mustAlloc(t, a, t0, req("a", 4*unit4k))
	before := encoded(t, a)
	ds, err := a.Allocate([]Request{req("b", 4*unit4k), req("c", 4*unit4k), req("d", 8*unit4k)}, t0+sec)
	if !errors.Is(err, ErrNoSpace) || api.CodeOf(err) != api.CodeNoSpace || ds != nil {
		t.Fatalf("Allocate = %v, %v; want NO_SPACE and nothing", ds, err)
	}
	if string(encoded(t, a)) != string(before) {
		t.Fatal("a failed shard batch changed the state")
	}
	if d := mustAlloc(t, a, t0+2*sec, req("e", 12*unit4k))[0]; d.Offset != 4*unit4k {
		t.Fatalf("e at %d: the batch's ranges were not returned", d.Offset)
	}
}

func TestShardFreeCoalesces(t *testing.T) {
	c := shardConfig(1, 8*unit4k)
	c.DeferredFreeSeconds = 0
	a := mustNew(t, c)
	ds := mustAlloc(t, a, t0, req("a", unit4k), req("b", unit4k), req("c", unit4k), req("d", 5*unit4k))
	must(t, a.Free("a", ds[0], t0))
	must(t, a.Free("c", ds[2], t0))
	must(t, a.Free("b", ds[1], t0))
	// a, b, c coalesce into one 3-unit range at 0.
	if d := mustAlloc(t, a, t0, req("e", 3*unit4k))[0]; d.Offset != 0 {
		t.Fatalf("e at %d, want 0 (coalesced)", d.Offset)
	}
}

func TestShardEvictionIsPerShardLRUSkippingLeasedAndPending(t *testing.T) {
	a := mustNew(t, shardConfig(1, 10*unit4k))
	var ds []api.DFSDescriptor
	for i, k := range []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"} {
		d := mustAlloc(t, a, t0+int64(i)*sec, req(k, unit4k))[0]
		if k != "k8" {
			must(t, a.Commit(k, d, t0+int64(i)*sec))
		}
		ds = append(ds, d)
	}
	must(t, a.Touch("k0", ds[0], t0+100*sec)) // k0 is now the most recent
	// live 9/10 >= 0.9 → down to 7/10: evict two, oldest first: k1 (leased) is
	// skipped, so k2 and k3.
	plan := a.PlanEviction(t0+200*sec, func(k string) bool { return k == "k1" })
	if len(plan.Candidates) != 1 || len(plan.Candidates[0].Entries) != 2 ||
		plan.Candidates[0].Entries[0].Key != "k2" || plan.Candidates[0].Entries[1].Key != "k3" {
		t.Fatalf("plan %+v, want k2 and k3", plan)
	}
	// k3 is removed meanwhile: only k2 is evicted, k3's abort is counted.
	must(t, a.Free("k3", ds[3], t0+201*sec))
	evicted, err := a.ApplyEviction(plan, t0+202*sec, nil)
	must(t, err)
	if len(evicted) != 1 || evicted[0].Key != "k2" || a.Stats().Aborted != 1 {
		t.Fatalf("evicted %+v, stats %+v", evicted, a.Stats())
	}
	// The evicted range is deferred like a free.
	if u := unit(t, a, 0); u.LiveEntries != 7 || u.DeadBytes != 2*unit4k {
		t.Fatalf("stats %+v, want 7 live entries and two deferred ranges", u)
	}
	// A pending entry is never planned, even if it is the oldest.
	b := mustNew(t, shardConfig(1, 2*unit4k))
	mustAlloc(t, b, t0, req("p", 2*unit4k))
	if plan := b.PlanEviction(t0+sec, nil); len(plan.Candidates) != 0 {
		t.Fatalf("plan %+v evicts a pending entry", plan)
	}
}

func TestShardEvictionDisabled(t *testing.T) {
	c := shardConfig(1, 2*unit4k)
	c.EvictionEnabled = false
	a := mustNew(t, c)
	d := mustAlloc(t, a, t0, req("p", 2*unit4k))[0]
	must(t, a.Commit("p", d, t0))
	if plan := a.PlanEviction(t0+sec, nil); len(plan.Candidates) != 0 {
		t.Fatalf("plan %+v with eviction disabled", plan)
	}
}

func TestShardFileOpsAndMarkLost(t *testing.T) {
	a := mustNew(t, shardConfig(4, 16*unit4k))
	if ops := a.PendingFileOps(); len(ops) != 0 {
		t.Fatalf("ops %+v before any allocation", ops)
	}
	d := mustAlloc(t, a, t0, req("a", 1))[0]
	ops := a.PendingFileOps()
	if len(ops) != 1 || ops[0].Kind != FileCreate || ops[0].Unit != d.UnitID || ops[0].Path != d.Path || ops[0].Size != 16*unit4k {
		t.Fatalf("ops %+v, want the create of %s", ops, d.Path)
	}
	must(t, a.ConfirmFileCreated(d.UnitID))
	if ops := a.PendingFileOps(); len(ops) != 0 {
		t.Fatalf("ops %+v after confirmation", ops)
	}
	must(t, a.Commit("a", d, t0))
	lost, err := a.MarkLost(d.UnitID, t0+sec)
	must(t, err)
	if len(lost) != 1 || lost[0] != (EntryRef{Key: "a", Desc: d}) {
		t.Fatalf("lost %+v", lost)
	}
	if ops := a.PendingFileOps(); len(ops) != 1 || ops[0].Unit != d.UnitID {
		t.Fatalf("ops %+v, want the lost shard's file recreated", ops)
	}
	// The lost range is deferred, not reused at once.
	if e := mustAlloc(t, a, t0+2*sec, req("a", 1))[0]; e.Offset == d.Offset {
		t.Fatal("lost range reused before the deferral")
	}
	for _, err := range []error{a.ConfirmFileDeleted(0), a.FileDeleteFailed(0, t0), a.SetMaxBuckets(3)} {
		if !errors.Is(err, ErrWrongAllocator) {
			t.Fatalf("bucket-only operation on shards: %v", err)
		}
	}
	if err := a.ConfirmFileCreated(4); !errors.Is(err, ErrUnknownUnit) {
		t.Fatalf("ConfirmFileCreated(4) of 4 shards: %v", err)
	}
}
