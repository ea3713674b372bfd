package holder

import (
	"fmt"
	"strings"
	"time"

	"sexton/api"
)

// checkGhosts pages through the replicas the master's table places on
// this segment and reports those this store holds dead (Store.Tombstoned)
// for the master to drop, each only while its key's COMPLETE incarnation
// is still the one reported. After a snapshot restore the table can list
// copies removed after the file's index: without this they would stay
// listed, unreadable, forever. It runs after the reconcile of every mount
// and master epoch change (a restore begins a new master epoch).
//
// A master that does not know the step answers INVALID_PARAMS naming the
// method: nothing is dropped and unsupported is true.
func (s *Service) checkGhosts() (unsupported bool, err error) {
	_, epoch, _ := s.mountState()
	seg := s.store.SegmentID()
	after := ""
	for {
		s.followTurn.Store(time.Now().UnixNano()) // a long check is progress
		ctx, cancel := s.ctx(20 * time.Second)
		lr, err := s.link.ListReplicas(ctx, &api.ListReplicasRequest{Segment: seg, MountEpoch: epoch, After: after, Limit: api.MaxReconcilePage})
		cancel()
		if err != nil {
			return unknownMethod(err, api.MethodListLocalDiskReplicas), err
		}
		if dead := s.store.Tombstoned(lr.Refs); len(dead) > 0 {
			ctx, cancel := s.ctx(20 * time.Second)
			dr, err := s.link.DropTombstoned(ctx, &api.DropTombstonedRequest{Segment: seg, MountEpoch: epoch, Refs: dead})
			cancel()
			if err != nil {
				return unknownMethod(err, api.MethodDropTombstonedReplicas), err
			}
			s.ghostsDropped.Add(int64(len(dr.Dropped)))
			s.log.Warn("the master listed copies this holder holds tombstoned; it dropped them from its table",
				"reported", len(dead), "dropped", len(dr.Dropped), "objects_gone", dr.Objects)
		}
		if !lr.More {
			return false, nil
		}
		if lr.Next <= after {
			return false, fmt.Errorf("ghost check: the master's cursor %q does not move past %q", lr.Next, after)
		}
		after = lr.Next
	}
}

// unknownMethod reports whether err is the answer of a master that does
// not know method.
func unknownMethod(err error, method string) bool {
	return api.CodeOf(err) == api.CodeInvalidParams && strings.Contains(err.Error(), "unknown method") && strings.Contains(err.Error(), method)
}
