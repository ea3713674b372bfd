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
	st.clients[seg.client] = seg.id
	st.wake.segment(seg.id) // a poll at the fenced epoch learns it at once
	res.MountEpoch = seg.epoch
	return res
}

// applyUnmount releases a mount held at exactly the given epoch. The
// segment's tasks stay for whoever mounts it next.
func (st *state) applyUnmount(c *UnmountLocalDisk) *UnmountResult {
	st.segGen++
	seg := st.segments[c.Segment]
	if seg == nil {
		return &UnmountResult{Err: api.Errorf(api.CodeSegmentNotFound, "unmount: unknown segment %s", c.Segment)}
	}
	if !seg.mounted || seg.epoch != c.Epoch {
		return &UnmountResult{Err: staleEpoch(seg, c.Epoch)}
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
