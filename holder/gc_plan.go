package holder

import (
	"sort"
)

// gcRecord is one live record a round copies into its target.
type gcRecord struct {
	src  *bucket
	slot int
	obj  ObjectMeta
}

// gcPlan is one round: up to maxGCSources sources, the live records to
// copy (in target order: source id, then offset), and the target id (0 when
// every source is fully dead and nothing needs a replacement).
type gcPlan struct {
	sources []*bucket
	srcLens []int // len(meta.Objects) of each source when planned
	records []gcRecord
	live    int64
	target  uint64
}

func (p *gcPlan) sourceIDs() []uint64 {
	ids := make([]uint64, len(p.sources))
	for i, b := range p.sources {
		ids[i] = b.id
	}
	return ids
}

// gcCandidate is a bucket with dead records, with the numbers victim
// choice sorts on.
type gcCandidate struct {
	b         *bucket
	ratio     float64
	score     float64 // cost-benefit, for the age-aware policy
	fullyDead bool
}

// gcPolicy is what a plan is chosen by.
type gcPolicy struct {
	ratio  float64 // minimum dead ratio in normal operation
	bypass bool    // disk pressure: any dead record qualifies
	// ageAware: cost-benefit choice (LFS): score = dead·age ÷ (live + total),
	// age = buckets created for puts since its data was written (a logical
	// clock, no wall time; see Store.putClock).
	// Normally a bucket then also needs the score a bucket of median age
	// has at the ratio (or twice the ratio), so young (hot) buckets wait
	// to die further.
	ageAware bool
	// maxLive, when positive, caps the live bytes a merge round copies:
	// on a (nearly) full disk only merges whose target fits the free space
	// run; fully dead rounds need no space and are not capped.
	maxLive int64
}

// deadRatio is the share of a bucket's record bytes that are dead; a
// bucket of empty values falls back to the share of records.
func deadRatio(b *bucket) float64 {
	if t := b.liveBytes + b.deadBytes; t > 0 {
		return float64(b.deadBytes) / float64(t)
	}
	if n := b.liveCount + b.deadCount; n > 0 {
		return float64(b.deadCount) / float64(n)
	}
	return 0
}

// costBenefit is LFS's (1−u)·age ÷ (1+u) with u the live share.
func costBenefit(ratio float64, age uint64) float64 {
	return ratio * float64(age) / (2 - ratio)
}

// gcCandidatesLocked lists the buckets a round may take, best victim
// first: fully dead (unlinked, no replacement), then higher dead ratio,
// then more dead bytes, then lower id (greedy), or by score then id
// (age-aware). Normally only buckets at or above the ratio qualify; under
// disk pressure (bypass) any bucket with a dead record does. Runs under
// s.mu.
func (s *Store) gcCandidatesLocked(pol gcPolicy, skip map[uint64]bool) []gcCandidate {
	var out []gcCandidate
	var ages []uint64
	for _, b := range s.buckets {
		if len(b.meta.Objects) > 0 {
			ages = append(ages, s.bucketAgeLocked(b))
		}
	}
	minScore := 0.0
	if pol.ageAware && !pol.bypass && len(ages) > 0 {
		sort.Slice(ages, func(i, j int) bool { return ages[i] < ages[j] })
		minScore = costBenefit(pol.ratio, ages[len(ages)/2])
	}
	for _, b := range s.buckets {
		if b.deadCount == 0 || skip[b.id] || b.streams > 0 {
			continue
		}
		r := deadRatio(b)
		c := gcCandidate{b: b, ratio: r, score: costBenefit(r, s.bucketAgeLocked(b)), fullyDead: b.liveCount == 0}
		// Age-aware deferral is capped: at twice the ratio a bucket goes
		// whatever its age, so no bucket holds more than 2r dead for long.
		deferred := c.score < minScore && r < min(1, 2*pol.ratio)
		if !pol.bypass && !c.fullyDead && (r < pol.ratio || deferred) {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, c := out[i], out[j]
		if a.fullyDead != c.fullyDead {
			return a.fullyDead
		}
		if pol.ageAware && a.score != c.score {
			return a.score > c.score
		}
		if a.ratio != c.ratio {
			return a.ratio > c.ratio
		}
		if a.b.deadBytes != c.b.deadBytes {
			return a.b.deadBytes > c.b.deadBytes
		}
		return a.b.id < c.b.id
	})
	return out
}

// planRoundLocked picks the next round, or nil when nothing qualifies. It
// seals the open bucket if it is a source (new puts go to a new bucket)
// and reserves the target id. Runs under s.mu.
func (s *Store) planRoundLocked(pol gcPolicy, skip map[uint64]bool) *gcPlan {
	cands := s.gcCandidatesLocked(pol, skip)
	if len(cands) == 0 {
		return nil
	}
	var chosen []*bucket
	if cands[0].fullyDead {
		for _, c := range cands {
			if !c.fullyDead || len(chosen) == maxGCSources {
				break
			}
			chosen = append(chosen, c.b)
		}
	} else {
		var live int64
		var count int
		limit := s.opts.BucketSizeLimit
		if pol.maxLive > 0 {
			limit = min(limit, pol.maxLive)
		}
		for _, c := range cands {
			if len(chosen) == maxGCSources {
				break
			}
			if live+c.b.liveBytes > limit || count+c.b.liveCount > s.opts.BucketKeysLimit {
				continue
			}
			chosen = append(chosen, c.b)
			live += c.b.liveBytes
			count += c.b.liveCount
		}
	}
	chosen = s.closeOverShadowsLocked(chosen)
	if len(chosen) == 0 {
		return nil
	}
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].id < chosen[j].id })
	p := &gcPlan{sources: chosen}
	for _, b := range chosen {
		p.srcLens = append(p.srcLens, len(b.meta.Objects))
		first := len(p.records)
		for slot := range b.meta.Objects {
			if b.states[slot] == stateLive {
				p.records = append(p.records, gcRecord{src: b, slot: slot, obj: b.meta.Objects[slot]})
				p.live += b.meta.Objects[slot].Size
			}
		}
		recs := p.records[first:]
		sort.Slice(recs, func(i, j int) bool { return recs[i].obj.Offset < recs[j].obj.Offset })
		if b.id == s.openID {
			s.openID = 0
		}
	}
	if len(p.records) > 0 {
		p.target = s.nextID
		s.nextID++
	}
	return p
}

// closeOverShadowsLocked keeps a round from dropping a tombstone that hides
// a live duplicate elsewhere (only legacy or crash-made duplicates exist):
// the bucket holding the duplicate joins the round, so the duplicate goes
// with its tombstone. A source whose closure does not fit is left out.
func (s *Store) closeOverShadowsLocked(chosen []*bucket) []*bucket {
	shadowAt := map[objectKey][]*bucket{}
	for _, b := range s.buckets {
		if b.shadowed == 0 {
			continue
		}
		for slot, st := range b.states {
			if st == stateShadowed {
				o := &b.meta.Objects[slot]
				k := objectKey{o.Key, o.Incarnation}
				shadowAt[k] = append(shadowAt[k], b)
			}
		}
	}
	if len(shadowAt) == 0 {
		return chosen
	}
	in := map[*bucket]bool{}
	var out []*bucket
	var live int64
	var count int
	for _, b := range chosen {
		// b plus everything its tombstones shadow, transitively.
		group := []*bucket{b}
		seen := map[*bucket]bool{b: true}
		for i := 0; i < len(group); i++ {
			g := group[i]
			for slot, st := range g.states {
				if st != stateTombstoned {
					continue
				}
				o := &g.meta.Objects[slot]
				for _, d := range shadowAt[objectKey{o.Key, o.Incarnation}] {
					if !seen[d] && !in[d] {
						seen[d] = true
						group = append(group, d)
					}
				}
			}
		}
		var gl int64
		var gc int
		for _, g := range group {
			if !in[g] {
				gl += g.liveBytes
				gc += g.liveCount
			}
		}
		if len(out)+len(group) > maxGCSources || live+gl > s.opts.BucketSizeLimit || count+gc > s.opts.BucketKeysLimit {
			continue
		}
		for _, g := range group {
			if !in[g] {
				in[g] = true
				out = append(out, g)
			}
		}
		live += gl
		count += gc
	}
	return out
}

// bucketAgeLocked is how many put buckets were created since b's data was
// written, plus one.
func (s *Store) bucketAgeLocked(b *bucket) uint64 { return s.putClock - b.born + 1 }
