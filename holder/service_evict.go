package holder

import (
	"fmt"
	"time"

	"sexton/api"
)

var _ Evictor = (*Service)(nil)

// EvictObjects tells the master, before live data is evicted, which
// replicas are about to go: the leader drops them in a Raft entry
// (DropReplicas), leaving out objects under a read lease and newest copies
// whose older copies still await deletion, and answers which it dropped.
// Only those may be freed: a holder that dropped bytes on its own would
// leave the master pointing readers at bytes that are gone. Without a
// mount, or without an answer, nothing is evicted.
func (s *Service) EvictObjects(refs []api.ObjectRef) ([]api.ObjectRef, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no master to tell; %d objects stay", ErrEvictionUnavailable, len(refs))
	}
	mounted, epoch, _ := s.mountState()
	if !mounted {
		return nil, fmt.Errorf("%w: not mounted; %d objects stay", ErrEvictionUnavailable, len(refs))
	}
	var out []api.ObjectRef
	for start := 0; start < len(refs); start += api.MaxBatchKeys {
		page := refs[start:min(start+api.MaxBatchKeys, len(refs))]
		ctx, cancel := s.ctx(20 * time.Second)
		resp, err := s.link.Evict(ctx, &api.EvictRequest{Segment: s.store.SegmentID(), MountEpoch: epoch, Refs: page})
		cancel()
		if err != nil {
			s.handleStale(err)
			return out, fmt.Errorf("%w: %v", ErrEvictionUnavailable, err)
		}
		out = append(out, resp.Evicted...)
	}
	return out, nil
}
