package fsm

import (
	"slices"

	"sexton/api"
)

// normalizeCaps sorts and deduplicates capabilities, so a mount's identity
// does not depend on the order a holder lists them in.
func normalizeCaps(caps []api.Capability) []api.Capability {
	if len(caps) == 0 {
		return nil
	}
	out := slices.Clone(caps)
	slices.Sort(out)
	return slices.Compact(out)
}

func validMountIDs(c *MountLocalDisk) *api.Error {
	switch {
	case c.ClientID == "":
		return api.Errorf(api.CodeInvalidParams, "mount: empty client id")
	case c.Segment == "":
		return api.Errorf(api.CodeInvalidParams, "mount: empty segment id")
	case c.Capacity < 0:
		return api.Errorf(api.CodeInvalidParams, "mount: negative capacity %d", c.Capacity)
	}
	for _, cp := range c.Capabilities {
		if cp == "" {
			return api.Errorf(api.CodeInvalidParams, "mount: empty capability")
		}
	}
	return nil
}

// applyMount mounts a segment. Three cases: an identical repeat by the
// current owner's process (SEGMENT_ALREADY_EXISTS, same epoch); that
// process changing pool, capacity, capabilities or endpoint (updated, same
// epoch); anyone else — another client, another process of the same client
// (a restart, or a copied directory), or a segment not mounted now — is a
// new owner: epoch+1, which fences whoever held it before. A client holds at most one segment: its
// previous one is unmounted, with its tasks kept.
func (st *state) applyMount(c *MountLocalDisk) *MountResult {
	st.segGen++
	res := &MountResult{MasterEpoch: st.masterEpoch, ClusterID: st.clusterID}
	if err := validMountIDs(c); err != nil {
		res.Err = err
		return res
	}
	caps := normalizeCaps(c.Capabilities)
	seg := st.segments[c.Segment]
	if seg != nil && seg.retired {
		res.Err = api.Errorf(api.CodeInvalidParams, "mount: segment %s is retired and cannot be mounted again", c.Segment)
		res.MountEpoch = seg.epoch
		return res
	}
	if err := st.lateHolder(c, seg); err != nil {
		res.Err = err
		if seg != nil {
			res.MountEpoch = seg.epoch
		}
		return res
	}
	if seg != nil && seg.mounted && seg.client == c.ClientID && seg.process == c.Process {
		res.MountEpoch = seg.epoch
		if seg.pool == c.Pool && seg.capacity == c.Capacity && seg.endpoint == c.Endpoint && slices.Equal(seg.caps, caps) {
			res.Err = api.Errorf(api.CodeSegmentAlreadyExists, "segment %s already mounted by %s at epoch %d", c.Segment, c.ClientID, seg.epoch)
			return res
		}
		seg.pool, seg.capacity, seg.endpoint, seg.caps = st.intern(c.Pool), c.Capacity, st.intern(c.Endpoint), caps
		st.wake.segment(seg.id) // its capabilities, and so its fetch gate, may have changed
		return res
	}
	if seg == nil {
		seg = &segment{id: api.SegmentID(st.intern(string(c.Segment)))}
		st.segments[seg.id] = seg
	}
	if seg.mounted && seg.client != "" {
		delete(st.clients, seg.client) // the previous owner is fenced
	}
	if other, ok := st.clients[c.ClientID]; ok && other != seg.id {
		if o := st.segments[other]; o != nil {
			o.mounted, o.client, o.process = false, "", ""
			st.wake.segment(o.id)
		}
	}
	seg.epoch++
	seg.client, seg.process = st.intern(c.ClientID), c.Process
	seg.pool, seg.capacity, seg.endpoint, seg.caps = st.intern(c.Pool), c.Capacity, st.intern(c.Endpoint), caps
	seg.mounted = true
	if st.rebuildCluster != 0 && c.MarkerCluster != nil && *c.MarkerCluster == 0 {
		// A never-bound directory joins the rebuilt cluster: its later
		// mounts, with a marker naming this cluster, are its own.
		seg.rebuildMember = true
	}
	st.clients[seg.client] = seg.id
	st.wake.segment(seg.id) // a poll at the fenced epoch learns it at once
	res.MountEpoch = seg.epoch
	return res
}

// applyUnmount releases a mount held at exactly the given epoch. The
// segment's tasks stay for whoever mounts it next.
func (st *state) applyUnmount(c *UnmountLocalDisk) *UnmountResult {
	st.segGen++
	seg, err := st.mountedAt("unmount", c.Segment, c.Epoch)
	if err != nil {
		return &UnmountResult{Err: err}
	}
	delete(st.clients, seg.client)
	seg.mounted, seg.client, seg.process = false, "", ""
	st.wake.segment(seg.id)
	return &UnmountResult{}
}

func staleEpoch(seg *segment, epoch uint64) *api.Error {
	if !seg.mounted {
		return api.Errorf(api.CodeStaleMountEpoch, "segment %s is not mounted (epoch %d presented, last mount epoch %d)", seg.id, epoch, seg.epoch)
	}
	return api.Errorf(api.CodeStaleMountEpoch, "segment %s is mounted at epoch %d, not %d", seg.id, seg.epoch, epoch)
}

// lateHolder refuses, on a cluster that rebuilt (or is rebuilding) a lost
// cluster, the mount of a segment the rebuild never scanned whose holder's
// marker names the lost cluster: mounted, it would reconcile against a
// table that lacks its copies and tombstone every one only it holds. A
// holder that does not report its marker (an older build) is refused the
// same way unless the segment is a member, since it cannot be told apart.
// A never-bound directory (marker zero) and a holder of any other cluster
// (which refuses to follow on its own) mount as everywhere.
func (st *state) lateHolder(c *MountLocalDisk, seg *segment) *api.Error {
	if st.rebuildCluster == 0 || (seg != nil && seg.rebuildMember) {
		return nil
	}
	switch {
	case c.MarkerCluster == nil:
		return api.Errorf(api.CodeSegmentNeedsAdoption, "mount: segment %s is not known to this cluster, which rebuilt cluster %016x, and its holder does not report the cluster its marker names (an older build): upgrade the holder so it can be told apart from a late holder of the lost cluster, or retire the segment", c.Segment, st.rebuildCluster)
	case *c.MarkerCluster != st.rebuildCluster:
		return nil
	case st.rebuildClosed:
		return api.Errorf(api.CodeSegmentNeedsAdoption, "mount: segment %s is a holder of lost cluster %016x that the rebuild never scanned, and the adoption window is closed (operator rebuild --close): its copies can no longer be adopted; retire it (operator retire) or wipe its directory", c.Segment, st.rebuildCluster)
	default:
		return api.Errorf(api.CodeSegmentNeedsAdoption, "mount: segment %s is a holder of lost cluster %016x that the rebuild did not scan; mounting it would tombstone every copy only it holds: adopt it (rerun `sexton operator rebuild` with this holder up and reachable) or retire it (operator retire) and wipe it", c.Segment, st.rebuildCluster)
	}
}
