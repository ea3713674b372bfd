package dfsalloc

import (
	"cmp"
	"slices"
)

// charge is what b counts for the eviction watermarks: a sealed bucket its
// whole capacity (no more can go in), the open one its cursor.
func (a *bucketAllocator) charge(b *bucket) float64 {
	if b.state == UnitSealed {
		return float64(a.cfg.BucketCapacity)
	}
	return float64(b.cursor)
}

// PlanEviction: fully dead sealed buckets first (always, eviction enabled
// or not: they hold nothing), then live buckets by least recent access
// while usage is at or above the high watermark, until it would reach the
// low one. Usage leaves out buckets already deleting, so a deletion that
// keeps failing does not make the planner evict ever more live buckets.
func (a *bucketAllocator) PlanEviction(_ int64, leased func(string) bool) EvictionPlan {
	plan := EvictionPlan{Allocator: KindBucket}
	var usage float64
	var live []*bucket
	for _, id := range a.ids {
		b := a.buckets[id]
		switch {
		case b.state == UnitDeleting:
		case b.state == UnitSealed && len(b.entries) == 0:
			if len(plan.Candidates) < MaxPlanCandidates {
				plan.Candidates = append(plan.Candidates, EvictionCandidate{Unit: id, Version: b.version})
			}
		default:
			usage += a.charge(b)
			if len(b.entries) > 0 && b.pending == 0 {
				live = append(live, b)
			}
		}
	}
	total := float64(a.maxBuckets) * float64(a.cfg.BucketCapacity)
	if !a.cfg.EvictionEnabled || usage < a.cfg.HighWatermark*total {
		return plan
	}
	target := a.cfg.LowWatermark * total
	slices.SortFunc(live, func(x, y *bucket) int {
		if c := cmp.Compare(x.lastAccess, y.lastAccess); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	for _, b := range live {
		if usage <= target || len(plan.Candidates) >= MaxPlanCandidates {
			break
		}
		if leased != nil && anyLeased(b, leased) {
			continue
		}
		plan.Candidates = append(plan.Candidates, EvictionCandidate{Unit: b.id, Version: b.version})
		usage -= a.charge(b)
	}
	return plan
}

func anyLeased(b *bucket, leased func(string) bool) bool {
	for _, e := range b.entries {
		if leased(e.key) {
			return true
		}
	}
	return false
}

// ApplyEviction evicts each candidate bucket whole, or not at all: it must
// still exist, not be deleting, be at the planned version (nothing appended,
// committed, freed or read since), hold no pending entry, and check must
// accept every live entry. Only then is its metadata dropped.
func (a *bucketAllocator) ApplyEviction(plan EvictionPlan, now int64, check func(EntryRef) bool) ([]EntryRef, error) {
	if err := checkPlan(plan, KindBucket); err != nil {
		return nil, err
	}
	var out []EntryRef
	for _, c := range plan.Candidates {
		b := a.buckets[c.Unit]
		if b == nil || b.state == UnitDeleting || b.version != c.Version || b.pending > 0 || len(c.Entries) != 0 {
			a.aborted++
			continue
		}
		refs := b.refs()
		if check != nil && !allAccepted(refs, check) {
			a.aborted++
			continue
		}
		a.drop(b, now)
		a.evicted++
		out = append(out, refs...)
	}
	return out, nil
}

func allAccepted(refs []EntryRef, check func(EntryRef) bool) bool {
	for _, r := range refs {
		if !check(r) {
			return false
		}
	}
	return true
}
