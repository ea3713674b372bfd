package snapshot

import (
	"bytes"
	"errors"
	"fmt"

	"sexton/api"
)

// Checks beyond decoding, applied by the writer before a record is written
// and by the reader after it is decoded, so the writer never produces a
// snapshot the reader refuses. They check shape and bounds only; whether the
// records make a consistent state is the FSM's to judge.

func validateObject(o *Object) error {
	if err := api.ValidKey(o.Key); err != nil {
		return fmt.Errorf("object: %v", err)
	}
	if len(o.Tenant) > api.MaxTenantLen {
		return fmt.Errorf("object %q: tenant of %d bytes", o.Key, len(o.Tenant))
	}
	if o.Size < 0 {
		return fmt.Errorf("object %q: negative size %d", o.Key, o.Size)
	}
	if o.State != ObjectPending && o.State != ObjectComplete {
		return fmt.Errorf("object %q: unknown state %d", o.Key, o.State)
	}
	if len(o.PutID) > api.MaxIDLen {
		return fmt.Errorf("object %q: put id of %d bytes", o.Key, len(o.PutID))
	}
	if len(o.Replicas) > api.MaxReplicas {
		return fmt.Errorf("object %q: %d replicas", o.Key, len(o.Replicas))
	}
	for i := range o.Replicas {
		if err := validateReplica(&o.Replicas[i]); err != nil {
			return fmt.Errorf("object %q replica %d: %v", o.Key, i, err)
		}
	}
	return nil
}

func validateReplica(r *api.ReplicaDescriptor) error {
	if len(r.Segment) > api.MaxIDLen || len(r.Pool) > api.MaxIDLen {
		return errors.New("segment or pool name too long")
	}
	switch r.Kind {
	case api.ReplicaLocalDisk:
		if r.Segment == "" {
			return errors.New("LOCAL_DISK replica names no segment")
		}
		if r.DFS != nil {
			return errors.New("LOCAL_DISK replica carries a DFS descriptor")
		}
	case api.ReplicaDFS:
		if r.DFS == nil {
			return errors.New("DFS replica has no descriptor")
		}
		if len(r.DFS.Allocator) > api.MaxIDLen || len(r.DFS.Path) > maxDFSPathLen {
			return errors.New("DFS descriptor string too long")
		}
	default:
		return fmt.Errorf("unknown replica kind %d", r.Kind)
	}
	return nil
}

func validateSegment(s *Segment) error {
	if s.ID == "" {
		return errors.New("segment: empty id")
	}
	if len(s.ID) > api.MaxIDLen || len(s.ClientID) > api.MaxIDLen || len(s.Pool) > api.MaxIDLen || len(s.Endpoint) > api.MaxIDLen {
		return fmt.Errorf("segment %q: id, client, pool or endpoint too long", s.ID)
	}
	if len(s.Capabilities) > api.MaxCapabilities {
		return fmt.Errorf("segment %q: %d capabilities", s.ID, len(s.Capabilities))
	}
	for _, c := range s.Capabilities {
		if len(c) > api.MaxIDLen {
			return fmt.Errorf("segment %q: capability name too long", s.ID)
		}
	}
	if len(s.Process) > api.MaxIDLen {
		return fmt.Errorf("segment %q: process id too long", s.ID)
	}
	return nil
}

func validateTask(t *Task) error {
	if t.Segment == "" || len(t.Segment) > api.MaxIDLen {
		return fmt.Errorf("task %d: bad segment id of %d bytes", t.ID, len(t.Segment))
	}
	if err := api.ValidKey(t.Key); err != nil {
		return fmt.Errorf("task %d: %v", t.ID, err)
	}
	if len(t.Tenant) > api.MaxTenantLen {
		return fmt.Errorf("task %d: tenant of %d bytes", t.ID, len(t.Tenant))
	}
	return nil
}

func validateState(s *State) error {
	if len(s.LeaderID) > api.MaxIDLen || len(s.LeaderAddr) > api.MaxIDLen {
		return errors.New("state: leader id or address too long")
	}
	if len(s.Audit) > maxAuditEntries {
		return fmt.Errorf("state: %d audit entries, more than %d", len(s.Audit), maxAuditEntries)
	}
	for i := range s.Audit {
		a := &s.Audit[i]
		if len(a.Segment) > api.MaxIDLen || len(a.By) > api.MaxIDLen || len(a.Reason) > maxReasonLen {
			return fmt.Errorf("state: audit entry %d: field too long", i)
		}
	}
	if s.Settings != nil && s.Legacy != nil {
		return errors.New("state: both replicated and legacy settings")
	}
	if n := len(s.GrantKey); n != 0 && n != api.GrantKeyLen {
		return fmt.Errorf("state: grant key of %d bytes, want %d", n, api.GrantKeyLen)
	}
	if err := validateIncBlocks(s.IncBlocks); err != nil {
		return err
	}
	if s.RebuildBase != 0 && (s.RebuildCluster == 0 || s.RebuildBase > s.IncBase) {
		return fmt.Errorf("state: rebuild_base %d without a rebuild, or above inc_base %d", s.RebuildBase, s.IncBase)
	}
	return validateRebuildRemoved(s)
}

// validateIncBlocks checks the live incarnation blocks: at most
// MaxIncBlocks, each non-empty, ascending and disjoint.
func validateIncBlocks(bs []IncBlock) error {
	if len(bs) > MaxIncBlocks {
		return fmt.Errorf("state: %d incarnation blocks, more than %d", len(bs), MaxIncBlocks)
	}
	for i, b := range bs {
		if b.Lo == 0 || b.Hi < b.Lo {
			return fmt.Errorf("state: incarnation block %d is [%d, %d]", i, b.Lo, b.Hi)
		}
		if i > 0 && b.Lo <= bs[i-1].Hi {
			return fmt.Errorf("state: incarnation block %d [%d, %d] is not above block %d [%d, %d]", i, b.Lo, b.Hi, i-1, bs[i-1].Lo, bs[i-1].Hi)
		}
	}
	return nil
}

// validateRebuildRemoved checks the removal memory: whole digests, at most
// MaxRebuildRemoved, strictly ascending, and only in an open window.
func validateRebuildRemoved(s *State) error {
	b := s.RebuildRemoved
	if len(b) == 0 {
		return nil
	}
	if len(b)%RebuildRemovedDigestLen != 0 || len(b)/RebuildRemovedDigestLen > MaxRebuildRemoved {
		return fmt.Errorf("state: rebuild_removed of %d bytes is not at most %d digests of %d bytes", len(b), MaxRebuildRemoved, RebuildRemovedDigestLen)
	}
	if s.RebuildCluster == 0 || s.RebuildClosed || s.RebuildOverflow {
		return errors.New("state: rebuild_removed without an open, not overflowed rebuild window")
	}
	for i := RebuildRemovedDigestLen; i < len(b); i += RebuildRemovedDigestLen {
		if bytes.Compare(b[i-RebuildRemovedDigestLen:i], b[i:i+RebuildRemovedDigestLen]) >= 0 {
			return fmt.Errorf("state: rebuild_removed digests not strictly ascending at %d", i/RebuildRemovedDigestLen)
		}
	}
	return nil
}

// hasV120Fields reports whether a state record uses a field that format
// 1.2.0 added.
func (s *State) hasV120Fields() bool {
	return s.Settings != nil || len(s.GrantKey) != 0 || s.SessionClock != 0 || s.IncBase != 0 || s.RebuildCluster != 0
}

// hasV140Fields reports whether a state record uses a field that format
// 1.4.0 added.
func (s *State) hasV140Fields() bool {
	return s.Legacy != nil || s.RebuildClosed || len(s.RebuildRemoved) != 0 || s.RebuildOverflow || len(s.IncBlocks) != 0 || s.RebuildBase != 0
}

func validateSession(s *SessionRecord) error {
	if s.ClientID == "" || len(s.ClientID) > api.MaxIDLen {
		return fmt.Errorf("session: client id of %d bytes", len(s.ClientID))
	}
	r := s.Result
	if r == nil {
		return nil
	}
	if r.Count < 0 || r.Count > maxSessionItems {
		return fmt.Errorf("session %q seq %d: count %d outside 0..%d", s.ClientID, r.Seq, r.Count, maxSessionItems)
	}
	if err := validateAPIError(r.Err); err != nil {
		return fmt.Errorf("session %q seq %d: %v", s.ClientID, r.Seq, err)
	}
	if err := validateReplicas(r.Replicas); err != nil {
		return fmt.Errorf("session %q seq %d: %v", s.ClientID, r.Seq, err)
	}
	if len(r.Items) > maxSessionItems {
		return fmt.Errorf("session %q seq %d: %d items", s.ClientID, r.Seq, len(r.Items))
	}
	for i := range r.Items {
		it := &r.Items[i]
		if err := validateAPIError(it.Err); err != nil {
			return fmt.Errorf("session %q seq %d item %d: %v", s.ClientID, r.Seq, i, err)
		}
		if err := validateReplicas(it.Replicas); err != nil {
			return fmt.Errorf("session %q seq %d item %d: %v", s.ClientID, r.Seq, i, err)
		}
	}
	return nil
}

func validateReplicas(rs []api.ReplicaDescriptor) error {
	if len(rs) > api.MaxReplicas {
		return fmt.Errorf("%d replicas", len(rs))
	}
	for i := range rs {
		if err := validateReplica(&rs[i]); err != nil {
			return fmt.Errorf("replica %d: %v", i, err)
		}
	}
	return nil
}

func validateAPIError(e *api.Error) error {
	if e == nil {
		return nil
	}
	if e.Code == "" || len(e.Code) > maxErrCodeLen || len(e.Message) > maxErrMessageLen || len(e.Leader) > api.MaxIDLen {
		return errors.New("error code empty or a field too long")
	}
	return nil
}
