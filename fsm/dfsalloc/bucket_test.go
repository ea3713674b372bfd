package dfsalloc

import (
	"errors"
	"testing"

	"sexton/api"
)

const unit4k = int64(4096)

func TestBucketEntriesArePaddedToTheAlignmentInRequestOrder(t *testing.T) {
	a := mustNew(t, bucketConfig(64*unit4k, 4))
	ds := mustAlloc(t, a, t0, req("a", 1), req("b", 4096), req("c", 4097), req("d", 0), req("e", 10_000))
	want := []struct{ off, size, aligned int64 }{
		{0, 1, 4096}, {4096, 4096, 4096}, {8192, 4097, 8192}, {16384, 0, 4096}, {20480, 10_000, 12288},
	}
	for i, d := range ds {
		w := want[i]
		if d.Allocator != KindBucket || d.Path != "bucket_0000000000000001.data" || d.UnitID != 1 ||
			d.Offset != w.off || d.Size != w.size || d.AlignedSize != w.aligned {
			t.Fatalf("descriptor %d = %+v, want offset %d size %d aligned %d in bucket 1", i, d, w.off, w.size, w.aligned)
		}
	}
	if u := unit(t, a, 1); u.Used != 32768 || u.LiveBytes != 32768 || u.PendingEntries != 5 {
		t.Fatalf("bucket 1 stats %+v, want cursor 32768 with 5 pending entries", u)
	}
}

func TestBucketTombstoneNeverRewindsOrReuses(t *testing.T) {
	a := mustNew(t, bucketConfig(64*unit4k, 4))
	first := mustAlloc(t, a, t0, req("k", 100))[0]
	must(t, a.Free("k", first, t0))
	again := mustAlloc(t, a, t0+1, req("k", 100))[0]
	if again.Offset != first.Offset+first.AlignedSize {
		t.Fatalf("re-allocation of the same key at %d, want after the tombstone at %d", again.Offset, first.Offset+first.AlignedSize)
	}
	must(t, a.Commit("k", again, t0+2))
	// The tombstoned range is no entry any more: freeing or committing it fails.
	if err := a.Free("k", first, t0+3); !errors.Is(err, ErrUnknownEntry) {
		t.Fatalf("second Free of a tombstone = %v, want ErrUnknownEntry", err)
	}
	u := unit(t, a, 1)
	if u.Used != 2*unit4k || u.DeadBytes != unit4k || u.LiveBytes != unit4k || u.LiveEntries != 1 {
		t.Fatalf("stats %+v, want cursor 8192, 4096 tombstoned, 4096 live", u)
	}
}

func TestBucketBatchFailureTombstonesTheWholeBatch(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 1))
	ds, err := a.Allocate([]Request{req("a", 2*unit4k), req("b", 2*unit4k), req("c", 1)}, t0)
	if !errors.Is(err, ErrNoSpace) || api.CodeOf(err) != api.CodeNoSpace || ds != nil {
		t.Fatalf("Allocate = %v, %v; want NO_SPACE and no descriptor", ds, err)
	}
	u := unit(t, a, 1)
	if u.State != UnitSealed || u.LiveEntries != 0 || u.DeadBytes != 4*unit4k || u.Used != 4*unit4k {
		t.Fatalf("after the failed batch bucket 1 is %+v, want sealed, all 16384 bytes tombstoned", u)
	}
	// The bucket is fully dead: the planner reclaims it, and the next
	// bucket gets a new id.
	plan := a.PlanEviction(t0, nil)
	if len(plan.Candidates) != 1 || plan.Candidates[0].Unit != 1 {
		t.Fatalf("plan %+v, want the dead bucket 1", plan)
	}
	evicted, err := a.ApplyEviction(plan, t0, nil)
	must(t, err)
	if len(evicted) != 0 {
		t.Fatalf("a dead bucket evicted entries %v", evicted)
	}
	must(t, a.ConfirmFileDeleted(1))
	d := mustAlloc(t, a, t0+1, req("a", 1))[0]
	if d.UnitID != 2 || d.Offset != 0 {
		t.Fatalf("next allocation %+v, want bucket 2 offset 0", d)
	}
}

func TestBucketMalformedBatchChangesNothing(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 2))
	mustAlloc(t, a, t0, req("a", 1))
	before := encoded(t, a)
	for _, batch := range [][]Request{
		{req("ok", 1), req("", 1)},
		{req("ok", 1), req("neg", -1)},
		{req("ok", 1), req("huge", 4*unit4k+1)},
		{},
	} {
		if _, err := a.Allocate(batch, t0+1); !errors.Is(err, ErrInvalidRequest) || api.CodeOf(err) != api.CodeInvalidParams {
			t.Fatalf("Allocate(%v) = %v, want INVALID_PARAMS", batch, err)
		}
	}
	if string(encoded(t, a)) != string(before) {
		t.Fatal("a refused batch changed the state")
	}
}

func TestBucketSealsWhenFullOrWhenAnEntryDoesNotFit(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 8))
	mustAlloc(t, a, t0, req("a", 4*unit4k))
	if u := unit(t, a, 1); u.State != UnitSealed {
		t.Fatalf("exactly full bucket is %s, want sealed", u.State)
	}
	b := mustAlloc(t, a, t0, req("b", unit4k))[0]
	c := mustAlloc(t, a, t0, req("c", 4*unit4k))[0]
	if b.UnitID != 2 || c.UnitID != 3 || c.Offset != 0 {
		t.Fatalf("b in %d, c in %d at %d; want 2, then a new bucket 3 at 0", b.UnitID, c.UnitID, c.Offset)
	}
	if u := unit(t, a, 2); u.State != UnitSealed || u.Used != unit4k {
		t.Fatalf("bucket 2 %+v, want sealed with its tail unused", u)
	}
	if ops := a.PendingFileOps(); len(ops) != 3 || ops[0].Kind != FileCreate || ops[0].Size != 4*unit4k || ops[2].Path != "bucket_0000000000000003.data" {
		t.Fatalf("file ops %+v, want a create of each of the three buckets", ops)
	}
	must(t, a.ConfirmFileCreated(2))
	must(t, a.ConfirmFileCreated(2))
	if ops := a.PendingFileOps(); len(ops) != 2 || ops[0].Unit != 1 || ops[1].Unit != 3 {
		t.Fatalf("file ops %+v after confirming bucket 2", ops)
	}
}

// fillSealed fills n buckets of 4 units with one committed 4-unit entry each.
func fillSealed(t *testing.T, a Allocator, n int, now int64) []api.DFSDescriptor {
	t.Helper()
	var out []api.DFSDescriptor
	for i := 0; i < n; i++ {
		key := string(rune('a' + i))
		d := mustAlloc(t, a, now, req(key, 4*unit4k))[0]
		must(t, a.Commit(key, d, now))
		out = append(out, d)
	}
	return out
}

func TestBucketMaxCountIncludesBucketsAwaitingDeletion(t *testing.T) {
	c := bucketConfig(4*unit4k, 2)
	a := mustNew(t, c)
	fillSealed(t, a, 2, t0)
	if _, err := a.Allocate([]Request{req("x", 1)}, t0); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("third bucket: %v, want NO_SPACE", err)
	}
	plan := a.PlanEviction(t0+sec, nil)
	evicted, err := a.ApplyEviction(plan, t0+sec, nil)
	must(t, err)
	if len(evicted) == 0 {
		t.Fatalf("plan %+v evicted nothing at usage 1.0", plan)
	}
	victim := evicted[0].Desc.UnitID
	// Deleting but not deleted: still charged.
	if _, err := a.Allocate([]Request{req("x", 1)}, t0+2*sec); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("allocation with a bucket awaiting deletion: %v, want NO_SPACE", err)
	}
	must(t, a.FileDeleteFailed(victim, t0+40*sec))
	ops := a.PendingFileOps()
	if len(ops) == 0 || ops[0].Kind != FileDelete || ops[0].Unit != victim || ops[0].Failures != 1 || ops[0].NotBefore != t0+sec+30*sec {
		t.Fatalf("file ops %+v, want a retried delete of bucket %d not before eviction+30s", ops, victim)
	}
	if s := a.Stats(); s.PendingDeletions != 1 || s.ChargedBuckets != 2 {
		t.Fatalf("stats %+v, want 1 pending deletion, 2 charged", s)
	}
	if _, err := a.Allocate([]Request{req("x", 1)}, t0+41*sec); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("allocation after a failed deletion: %v, want NO_SPACE", err)
	}
	must(t, a.ConfirmFileDeleted(victim))
	must(t, a.ConfirmFileDeleted(victim)) // a new leader repeating it
	d := mustAlloc(t, a, t0+42*sec, req("x", 1))[0]
	if d.UnitID != 3 {
		t.Fatalf("new bucket id %d, want 3 (ids are never reused)", d.UnitID)
	}
}

func TestBucketEvictionIsLRUBetweenWatermarks(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 4))
	ds := fillSealed(t, a, 4, t0)
	// Bucket 1 is read last; buckets 2 and 3 are the least recently used.
	must(t, a.Touch("a", ds[0], t0+10*sec))
	must(t, a.Touch("d", ds[3], t0+5*sec))
	plan := a.PlanEviction(t0+20*sec, nil)
	// usage 4/4 >= 0.9; low 0.7 → 2.8 buckets: evict two.
	if len(plan.Candidates) != 2 || plan.Candidates[0].Unit != 2 || plan.Candidates[1].Unit != 3 {
		t.Fatalf("plan %+v, want buckets 2 and 3", plan)
	}
	evicted, err := a.ApplyEviction(plan, t0+20*sec, nil)
	must(t, err)
	if len(evicted) != 2 || evicted[0] != (EntryRef{Key: "b", Desc: ds[1]}) || evicted[1] != (EntryRef{Key: "c", Desc: ds[2]}) {
		t.Fatalf("evicted %+v", evicted)
	}
	for _, id := range []uint64{2, 3} {
		if u := unit(t, a, id); u.State != UnitDeleting || u.LiveEntries != 0 {
			t.Fatalf("bucket %d %+v, want deleting with no entries", id, u)
		}
	}
	if err := a.Commit("b", ds[1], t0+21*sec); !errors.Is(err, ErrUnknownEntry) {
		t.Fatalf("entry of an evicted bucket still known: %v", err)
	}
	// Below the high watermark (counting only buckets not deleting): nothing.
	if plan := a.PlanEviction(t0+30*sec, nil); len(plan.Candidates) != 0 {
		t.Fatalf("second plan %+v, want none", plan)
	}
}

func TestBucketEvictionSkipsLeasedAndPendingBuckets(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 2))
	d1 := mustAlloc(t, a, t0, req("a", unit4k), req("leased", unit4k), req("c", 2*unit4k))
	for i, k := range []string{"a", "leased", "c"} {
		must(t, a.Commit(k, d1[i], t0))
	}
	mustAlloc(t, a, t0+sec, req("pending", 4*unit4k))
	leased := func(k string) bool { return k == "leased" }
	if plan := a.PlanEviction(t0+2*sec, leased); len(plan.Candidates) != 0 {
		t.Fatalf("plan %+v, want none: bucket 1 has a leased entry, bucket 2 a pending one", plan)
	}
	plan := a.PlanEviction(t0+2*sec, nil)
	if len(plan.Candidates) != 1 || plan.Candidates[0].Unit != 1 {
		t.Fatalf("unleased plan %+v, want bucket 1", plan)
	}
}

func TestBucketApplyEvictionAbortsWholeCandidate(t *testing.T) {
	setup := func(t *testing.T) (Allocator, []api.DFSDescriptor, EvictionPlan) {
		a := mustNew(t, bucketConfig(4*unit4k, 1))
		ds := mustAlloc(t, a, t0, req("a", unit4k), req("b", unit4k), req("c", 2*unit4k))
		for i, k := range []string{"a", "b", "c"} {
			must(t, a.Commit(k, ds[i], t0))
		}
		plan := a.PlanEviction(t0+sec, nil)
		if len(plan.Candidates) != 1 {
			t.Fatalf("plan %+v, want bucket 1", plan)
		}
		return a, ds, plan
	}
	t.Run("one entry refused by the fsm check", func(t *testing.T) {
		a, _, plan := setup(t)
		evicted, err := a.ApplyEviction(plan, t0+2*sec, func(r EntryRef) bool { return r.Key != "b" })
		must(t, err)
		if len(evicted) != 0 {
			t.Fatalf("evicted %v despite a refused entry", evicted)
		}
		if u := unit(t, a, 1); u.LiveEntries != 3 || u.State != UnitSealed {
			t.Fatalf("bucket %+v, want all three entries kept", u)
		}
		if a.Stats().Aborted != 1 {
			t.Fatal("abort not counted")
		}
	})
	t.Run("bucket changed since planning", func(t *testing.T) {
		a, ds, plan := setup(t)
		must(t, a.Touch("c", ds[2], t0+3*sec))
		evicted, err := a.ApplyEviction(plan, t0+4*sec, nil)
		must(t, err)
		if len(evicted) != 0 || unit(t, a, 1).LiveEntries != 3 {
			t.Fatalf("evicted %v from a bucket read after planning", evicted)
		}
	})
	t.Run("new pending entry since planning", func(t *testing.T) {
		a := mustNew(t, bucketConfig(4*unit4k, 1))
		d := mustAlloc(t, a, t0, req("a", unit4k))[0]
		must(t, a.Commit("a", d, t0))
		cfgPlan := EvictionPlan{Allocator: KindBucket, Candidates: []EvictionCandidate{{Unit: 1, Version: a.Records()[1].Unit.Version}}}
		mustAlloc(t, a, t0+sec, req("p", unit4k))
		evicted, err := a.ApplyEviction(cfgPlan, t0+2*sec, nil)
		must(t, err)
		if len(evicted) != 0 || unit(t, a, 1).LiveEntries != 2 {
			t.Fatalf("evicted %v from a bucket with a pending entry", evicted)
		}
	})
	t.Run("valid plan evicts everything", func(t *testing.T) {
		a, ds, plan := setup(t)
		evicted, err := a.ApplyEviction(plan, t0+2*sec, func(EntryRef) bool { return true })
		must(t, err)
		if len(evicted) != 3 || evicted[0].Desc != ds[0] || evicted[2].Desc != ds[2] {
			t.Fatalf("evicted %+v, want the three entries by offset", evicted)
		}
	})
	t.Run("wrong allocator", func(t *testing.T) {
		a, _, plan := setup(t)
		plan.Allocator = KindShard
		if _, err := a.ApplyEviction(plan, t0, nil); !errors.Is(err, ErrWrongAllocator) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestBucketDeadBucketsAreReclaimedEvenWithEvictionDisabled(t *testing.T) {
	c := bucketConfig(4*unit4k, 8)
	c.EvictionEnabled = false
	a := mustNew(t, c)
	ds := fillSealed(t, a, 3, t0)
	must(t, a.Free("b", ds[1], t0+sec))
	plan := a.PlanEviction(t0+2*sec, nil)
	if len(plan.Candidates) != 1 || plan.Candidates[0].Unit != 2 {
		t.Fatalf("plan %+v, want only the dead bucket 2", plan)
	}
}

func TestBucketCommitAndFreeCheckTheExactDescriptor(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 2))
	d := mustAlloc(t, a, t0, req("k", 100))[0]
	wrongSize, wrongPath, wrongKind := d, d, d
	wrongSize.Size = 99
	wrongPath.Path = "bucket_0000000000000002.data"
	wrongKind.Allocator = KindShard
	for _, tc := range []struct {
		key  string
		d    api.DFSDescriptor
		want error
	}{
		{"other", d, ErrDescriptorMismatch},
		{"k", wrongSize, ErrDescriptorMismatch},
		{"k", wrongPath, ErrDescriptorMismatch},
		{"k", wrongKind, ErrWrongAllocator},
		{"k", api.DFSDescriptor{Allocator: KindBucket, UnitID: 1, Offset: 4096}, ErrUnknownEntry},
		{"k", api.DFSDescriptor{Allocator: KindBucket, UnitID: 9}, ErrUnknownEntry},
	} {
		if err := a.Commit(tc.key, tc.d, t0); !errors.Is(err, tc.want) {
			t.Errorf("Commit(%q, %+v) = %v, want %v", tc.key, tc.d, err, tc.want)
		}
		if err := a.Free(tc.key, tc.d, t0); !errors.Is(err, tc.want) {
			t.Errorf("Free(%q, %+v) = %v, want %v", tc.key, tc.d, err, tc.want)
		}
	}
	must(t, a.Commit("k", d, t0))
	must(t, a.Commit("k", d, t0)) // idempotent
	if u := unit(t, a, 1); u.PendingEntries != 0 || u.LiveEntries != 1 {
		t.Fatalf("stats %+v", u)
	}
}

func TestBucketMarkLostReportsEveryEntry(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 2))
	ds := mustAlloc(t, a, t0, req("a", 1), req("b", 1))
	must(t, a.Commit("a", ds[0], t0))
	lost, err := a.MarkLost(1, t0+sec)
	must(t, err)
	if len(lost) != 2 || lost[0].Desc != ds[0] || lost[1].Key != "b" {
		t.Fatalf("lost %+v, want a (committed) and b (pending)", lost)
	}
	if u := unit(t, a, 1); u.State != UnitDeleting {
		t.Fatalf("lost bucket is %s, want deleting", u.State)
	}
	if again, err := a.MarkLost(1, t0+2*sec); err != nil || len(again) != 0 {
		t.Fatalf("second MarkLost = %v, %v", again, err)
	}
	// The lost bucket was the open one: the next entry opens bucket 2.
	if d := mustAlloc(t, a, t0+3*sec, req("c", 1))[0]; d.UnitID != 2 {
		t.Fatalf("next entry in bucket %d, want 2", d.UnitID)
	}
	if _, err := a.MarkLost(7, t0); !errors.Is(err, ErrUnknownUnit) {
		t.Fatalf("MarkLost of an unknown bucket: %v", err)
	}
}

func TestBucketSetMaxBuckets(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 1))
	fillSealed(t, a, 1, t0)
	if _, err := a.Allocate([]Request{req("x", 1)}, t0); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err %v", err)
	}
	must(t, a.SetMaxBuckets(2))
	mustAlloc(t, a, t0, req("x", 1))
	if err := a.SetMaxBuckets(0); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("SetMaxBuckets(0) = %v", err)
	}
	if s := roundTrip(t, a).Stats(); s.MaxBuckets != 2 {
		t.Fatalf("restored max %d, want 2", s.MaxBuckets)
	}
}

func TestBucketIDsSurviveRestore(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 2))
	ds := fillSealed(t, a, 2, t0)
	must(t, a.Free("a", ds[0], t0))
	must(t, a.Free("b", ds[1], t0))
	evicted, err := a.ApplyEviction(a.PlanEviction(t0, nil), t0, nil)
	must(t, err)
	if len(evicted) != 0 || a.Stats().PendingDeletions != 2 {
		t.Fatalf("dead buckets not reclaimed: %+v", a.Stats())
	}
	must(t, a.ConfirmFileDeleted(1))
	must(t, a.ConfirmFileDeleted(2))
	b := roundTrip(t, a)
	if d := mustAlloc(t, b, t0+sec, req("n", 1))[0]; d.UnitID != 3 {
		t.Fatalf("after restore the next bucket is %d, want 3", d.UnitID)
	}
}

func TestBucketRefusedRequestDoesNotSealTheOpenBucket(t *testing.T) {
	a := mustNew(t, bucketConfig(4*unit4k, 1))
	mustAlloc(t, a, t0, req("a", unit4k))
	if _, err := a.Allocate([]Request{req("big", 4*unit4k)}, t0); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err %v, want NO_SPACE", err)
	}
	if d := mustAlloc(t, a, t0, req("b", unit4k))[0]; d.UnitID != 1 || d.Offset != unit4k {
		t.Fatalf("b = %+v, want bucket 1 offset 4096 (the open bucket kept its tail)", d)
	}
}
