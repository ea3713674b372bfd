package dfsalloc

// PendingFileOps: a create for every shard whose file is needed and not yet
// confirmed. Shard files are never deleted.
func (a *shardAllocator) PendingFileOps() []FileOp {
	var ops []FileOp
	for _, s := range a.shards {
		if s.file == FileNeeded {
			ops = append(ops, FileOp{Kind: FileCreate, Allocator: KindShard, Unit: s.id, Path: s.path, Size: a.cfg.ShardCapacity})
		}
	}
	return ops
}

func (a *shardAllocator) shard(unit uint64) (*shard, error) {
	if unit >= uint64(len(a.shards)) {
		return nil, errorf(ErrUnknownUnit, "shard %d of %d does not exist", unit, len(a.shards))
	}
	return a.shards[unit], nil
}

// ConfirmFileCreated marks the shard's file as existing (also one the
// leader created ahead of need).
func (a *shardAllocator) ConfirmFileCreated(unit uint64) error {
	s, err := a.shard(unit)
	if err != nil {
		return err
	}
	s.file = FileReady
	return nil
}

func (a *shardAllocator) ConfirmFileDeleted(unit uint64) error {
	return errorf(ErrWrongAllocator, "shard files are never deleted (shard %d)", unit)
}

func (a *shardAllocator) FileDeleteFailed(unit uint64, _ int64) error {
	return errorf(ErrWrongAllocator, "shard files are never deleted (shard %d)", unit)
}

// MarkLost drops every entry of a shard whose file is missing. Their ranges
// are deferred, not freed: a reader holding an old descriptor must not see
// a new object's bytes in the recreated file. The file must be created
// again.
func (a *shardAllocator) MarkLost(unit uint64, now int64) ([]EntryRef, error) {
	s, err := a.shard(unit)
	if err != nil {
		return nil, err
	}
	if s.file == 0 {
		return nil, nil
	}
	es := s.sortedEntries()
	refs := make([]EntryRef, len(es))
	for i, e := range es {
		refs[i] = EntryRef{Key: e.key, Desc: descOf(KindShard, s.path, s.id, e)}
		a.deferFree(s, e, now)
	}
	s.file = FileNeeded
	a.lost++
	return refs, nil
}

func (a *shardAllocator) SetMaxBuckets(int) error {
	return errorf(ErrWrongAllocator, "%s applies only to the bucket allocator", SettingMaxBucketCount)
}
