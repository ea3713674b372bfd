package holder

import "fmt"

// BindCluster records the cluster this directory belongs to, the first time
// a master tells the holder (the marker is created before the holder knows
// it). Binding to the recorded cluster again is a no-op; binding to another
// one is ErrClusterMismatch and changes nothing.
func (s *Store) BindCluster(clusterID uint64) error {
	if clusterID == 0 {
		return fmt.Errorf("%w: cluster id 0", ErrBadOptions)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	switch s.id.ClusterID {
	case clusterID:
		return nil
	case 0:
	default:
		return fmt.Errorf("%w: %s records cluster %016x, not %016x", ErrClusterMismatch, s.dir, s.id.ClusterID, clusterID)
	}
	next := s.id
	next.ClusterID = clusterID
	err := writeIdentity(s.fs, s.dir, next)
	// A holder that first meets its cluster on a full disk must still
	// mount, or the deletes that would free the disk never reach it: the
	// marker is a metadata write of the deletion path like a tombstone's.
	if err != nil && s.retryAfterNoSpace(spacePathIdentity, err) {
		err = writeIdentity(s.fs, s.dir, next)
	}
	if err != nil {
		return err
	}
	// Only the cluster id changes: SegmentID reads s.id.SegmentID without
	// the lock, which is safe because nothing writes that field after open.
	s.id.ClusterID = clusterID
	return nil
}
