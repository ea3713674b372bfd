package dfsalloc

import "sort"

// extent is a free byte range of a shard.
type extent struct{ off, len int64 }

// freeList is a shard's free space: extents sorted by offset and always
// fully coalesced (no two touch). That makes it canonical — a function of
// the used ranges alone — so a snapshot need not store it and a restore
// rebuilds exactly the same list.
type freeList []extent

// take hands out size bytes by first fit: the lowest-offset extent that is
// large enough, from its start. First fit keeps allocations packed at the
// low end of the file and is deterministic without any tie-breaking.
func (f *freeList) take(size int64) (int64, bool) {
	l := *f
	for i := range l {
		if l[i].len < size {
			continue
		}
		off := l[i].off
		if l[i].len == size {
			*f = append(l[:i], l[i+1:]...)
		} else {
			l[i].off += size
			l[i].len -= size
		}
		return off, true
	}
	return 0, false
}

// give returns [off, off+size) to the list, merging it with the extents it
// touches. The range must be disjoint from every free extent.
func (f *freeList) give(off, size int64) {
	l := *f
	i := sort.Search(len(l), func(i int) bool { return l[i].off > off })
	mergePrev := i > 0 && l[i-1].off+l[i-1].len == off
	mergeNext := i < len(l) && off+size == l[i].off
	switch {
	case mergePrev && mergeNext:
		l[i-1].len += size + l[i].len
		*f = append(l[:i], l[i+1:]...)
	case mergePrev:
		l[i-1].len += size
	case mergeNext:
		l[i].off = off
		l[i].len += size
	default:
		l = append(l, extent{})
		copy(l[i+1:], l[i:])
		l[i] = extent{off, size}
		*f = l
	}
}

// complement is the canonical free list of [0, capacity) minus used, which
// must be sorted by offset and disjoint.
func complement(used []extent, capacity int64) freeList {
	var out freeList
	var at int64
	for _, u := range used {
		if u.off > at {
			out = append(out, extent{at, u.off - at})
		}
		at = u.off + u.len
	}
	if at < capacity {
		out = append(out, extent{at, capacity - at})
	}
	return out
}
