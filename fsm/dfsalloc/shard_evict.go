package dfsalloc

import (
	"cmp"
	"slices"
)

// PlanEviction: for every shard whose live bytes are at or above the high
// watermark of its capacity, its least recently used committed entries that
// are not leased, until the live bytes would reach the low watermark.
// Deferred bytes do not count: they become free on their own, and evicting
// live entries only adds to them.
func (a *shardAllocator) PlanEviction(_ int64, leased func(string) bool) EvictionPlan {
	plan := EvictionPlan{Allocator: KindShard}
	if !a.cfg.EvictionEnabled {
		return plan
	}
	capacity := float64(a.cfg.ShardCapacity)
	budget := MaxPlanEntries
	for _, s := range a.shards {
		if budget == 0 || len(plan.Candidates) >= MaxPlanCandidates {
			break
		}
		live := float64(s.live)
		if live < a.cfg.HighWatermark*capacity {
			continue
		}
		target := a.cfg.LowWatermark * capacity
		es := s.sortedEntries()
		slices.SortStableFunc(es, func(x, y *entry) int { return cmp.Compare(x.lastAccess, y.lastAccess) })
		var refs []EntryRef
		for _, e := range es {
			if live <= target || budget == 0 {
				break
			}
			if e.pending || (leased != nil && leased(e.key)) {
				continue
			}
			refs = append(refs, EntryRef{Key: e.key, Desc: descOf(KindShard, s.path, s.id, e)})
			live -= float64(e.aligned)
			budget--
		}
		if len(refs) > 0 {
			plan.Candidates = append(plan.Candidates, EvictionCandidate{Unit: s.id, Entries: refs})
		}
	}
	return plan
}

// ApplyEviction evicts each planned entry that still matches exactly, is
// committed and is accepted by check; the others are counted as aborted.
// Shard entries are independent (no whole-file reclaim), so there is no
// all-or-nothing across a shard. An evicted range is deferred like a free.
func (a *shardAllocator) ApplyEviction(plan EvictionPlan, now int64, check func(EntryRef) bool) ([]EntryRef, error) {
	if err := checkPlan(plan, KindShard); err != nil {
		return nil, err
	}
	n := 0
	for _, c := range plan.Candidates {
		n += len(c.Entries)
	}
	if n > MaxPlanEntries {
		return nil, invalidf("plan of %d entries exceeds %d", n, MaxPlanEntries)
	}
	var out []EntryRef
	for _, c := range plan.Candidates {
		for _, r := range c.Entries {
			if r.Desc.UnitID != c.Unit {
				a.aborted++
				continue
			}
			s, e, err := a.find(r.Key, r.Desc)
			if err != nil || e.pending || (check != nil && !check(r)) {
				a.aborted++
				continue
			}
			a.deferFree(s, e, now)
			a.evicted++
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y EntryRef) int {
		if c := cmp.Compare(x.Desc.UnitID, y.Desc.UnitID); c != 0 {
			return c
		}
		return cmp.Compare(x.Desc.Offset, y.Desc.Offset)
	})
	return out, nil
}
