package dfsalloc

import "slices"

// PendingFileOps: a create for every live bucket whose file is not
// confirmed, a delete for every deleting bucket, by bucket id.
func (a *bucketAllocator) PendingFileOps() []FileOp {
	var ops []FileOp
	for _, id := range a.ids {
		b := a.buckets[id]
		switch {
		case b.state == UnitDeleting:
			ops = append(ops, FileOp{
				Kind: FileDelete, Allocator: KindBucket, Unit: id, Path: b.path,
				NotBefore: satAdd(b.deletingSince, a.cfg.deferNanos()), Failures: b.deleteFailures,
			})
		case b.file == FileNeeded:
			ops = append(ops, FileOp{Kind: FileCreate, Allocator: KindBucket, Unit: id, Path: b.path, Size: a.cfg.BucketCapacity})
		}
	}
	return ops
}

// gone reports whether id was handed out once and has since been deleted.
func (a *bucketAllocator) gone(id uint64) bool {
	return id >= 1 && id < a.nextID && a.buckets[id] == nil
}

// ConfirmFileCreated marks the bucket's file as existing. For a bucket that
// is already gone it returns ErrUnknownUnit: the leader must then remove the
// file it just created.
func (a *bucketAllocator) ConfirmFileCreated(unit uint64) error {
	b := a.buckets[unit]
	if b == nil {
		return errorf(ErrUnknownUnit, "bucket %d does not exist", unit)
	}
	b.file = FileReady
	return nil
}

// ConfirmFileDeleted ends a deleting bucket. Confirming a bucket that is
// already gone is a no-op, so a new leader may repeat the old one's work.
func (a *bucketAllocator) ConfirmFileDeleted(unit uint64) error {
	b := a.buckets[unit]
	if b == nil {
		if a.gone(unit) {
			return nil
		}
		return errorf(ErrUnknownUnit, "bucket %d does not exist", unit)
	}
	if b.state != UnitDeleting {
		return errorf(ErrWrongState, "bucket %d is %s, not deleting", unit, b.state)
	}
	delete(a.buckets, unit)
	if i, ok := slices.BinarySearch(a.ids, unit); ok {
		a.ids = slices.Delete(a.ids, i, i+1)
	}
	return nil
}

// FileDeleteFailed counts a failed deletion; the bucket stays deleting and
// charged, and its delete stays in PendingFileOps.
func (a *bucketAllocator) FileDeleteFailed(unit uint64, _ int64) error {
	b := a.buckets[unit]
	if b == nil {
		return errorf(ErrUnknownUnit, "bucket %d does not exist", unit)
	}
	if b.state != UnitDeleting {
		return errorf(ErrWrongState, "bucket %d is %s, not deleting", unit, b.state)
	}
	if b.deleteFailures < ^uint32(0) {
		b.deleteFailures++
	}
	return nil
}

// MarkLost drops every entry of a bucket whose file is missing and starts
// its deletion (a missing file deletes at once; a file that reappears is
// removed). A deleting bucket has nothing left to lose.
func (a *bucketAllocator) MarkLost(unit uint64, now int64) ([]EntryRef, error) {
	b := a.buckets[unit]
	if b == nil {
		return nil, errorf(ErrUnknownUnit, "bucket %d does not exist", unit)
	}
	if b.state == UnitDeleting {
		return nil, nil
	}
	refs := b.refs()
	a.drop(b, now)
	a.lost++
	return refs, nil
}

// SetMaxBuckets changes the maximum at run time (a Raft command). Lowering
// it below the current count stops new buckets until eviction and deletion
// bring the count down; nothing is evicted by it.
func (a *bucketAllocator) SetMaxBuckets(n int) error {
	if n <= 0 || n > MaxBucketCountLimit {
		return invalidf("%s %d is not in [1, %d]", SettingMaxBucketCount, n, MaxBucketCountLimit)
	}
	a.maxBuckets = n
	return nil
}
