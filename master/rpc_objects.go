package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/dfsio"
	"sexton/fsm"
	"sexton/grant"
	"sexton/master/policy/placement"
)

// locations joins replica descriptors with the data address of the holder
// that currently mounts each segment.
func (n *Node) locations(reps []api.ReplicaDescriptor) []api.ReplicaLocation {
	out := make([]api.ReplicaLocation, 0, len(reps))
	for _, r := range reps {
		loc := api.ReplicaLocation{ReplicaDescriptor: r}
		if r.Kind == api.ReplicaLocalDisk {
			if seg, ok := n.fsm.Segment(r.Segment); ok && seg.Mounted {
				loc.Endpoint = seg.Endpoint
			}
		}
		out = append(out, loc)
	}
	return out
}

func (n *Node) objectInfo(v fsm.ObjectView) api.ObjectInfo {
	return api.ObjectInfo{Key: v.Key, Tenant: v.Tenant, Size: v.Size, Incarnation: v.Incarnation, Created: v.Created, Replicas: n.locations(v.Replicas)}
}

func (n *Node) handlePutStart(ctx context.Context, req *api.PutStartRequest) (*api.PutStartResponse, error) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	if err := n.checkPut(req); err != nil {
		return nil, err
	}
	now := time.Now()
	reps, placeErr := n.placeReplicas(req, now, placementRand(now))
	if placeErr != nil && req.Session.IsZero() {
		return nil, placeErr
	}
	// A sessioned put that cannot be placed is still proposed, without
	// replicas: if it repeats a request that was executed, the session
	// table answers with the first result (the put is not started twice
	// and not reported failed); if not, the fsm refuses it, stores that
	// refusal, and the placement error is the answer. A repeat answered
	// with that stored refusal gets the same placement error, even when
	// placement would succeed now: exactly once means the same answer.
	r, err := proposeFor[fsm.PutStartResult](n, &fsm.PutStart{V: fsm.PutStartV2, PutStartItem: startItem(req, reps), Session: req.Session, Now: now.UnixNano()})
	if r != nil && fsm.IsUnplaced(r.Err) {
		return nil, placement.NoPlacement(req.ReplicaNum, req.Size)
	}
	if err != nil {
		return nil, err
	}
	if err := n.checkStillPending(req.Key, r.Incarnation); err != nil {
		return nil, err
	}
	if hasDFS(r.Replicas) {
		if err := n.dfsWaitReady(ctx, r.Replicas); err != nil {
			// A repeat revokes nothing: the first answer stands, and the
			// put is discarded like any other if it never ends.
			if !r.Duplicate {
				n.revokeLeader(req.Key, r.Incarnation)
			}
			return nil, err
		}
	}
	return &api.PutStartResponse{Incarnation: r.Incarnation, Replicas: n.putLocations(req.Key, r.Incarnation, req.Size, r.Replicas, time.Now())}, nil
}

// startItem is the fsm's item of a put start request placed on reps (a
// PutStart's body, one item of a PutStartBatch).
func startItem(r *api.PutStartRequest, reps []api.ReplicaDescriptor) fsm.PutStartItem {
	return fsm.PutStartItem{Key: r.Key, Tenant: r.Tenant, Size: r.Size, Replicas: reps, PutID: r.PutID, IfAbsent: r.IfAbsent}
}

// checkStillPending refuses to answer a started put with write grants
// once its incarnation is no longer the key's pending one. A repeated
// PutStart is answered from the session table with the first incarnation
// even after the put was revoked (the leader discards abandoned puts) or
// ended; grants for it would let a client write bytes for an incarnation
// whose delete tasks may already have tombstoned it, and a DFS range the
// revoke freed may belong to another object by now.
func (n *Node) checkStillPending(key string, inc api.ObjectIncarnation) *api.Error {
	if n.fsm.IsPending(key, inc) {
		return nil
	}
	return api.Errorf(api.CodeObjectNotFound, "put %q %s is no longer in progress (abandoned and revoked, or already ended): no write grants; start the put again with a new request", key, inc)
}

// revokeLeader revokes a pending put on the leader's own initiative (its
// DFS files never became ready); the client is told the put failed.
func (n *Node) revokeLeader(key string, inc api.ObjectIncarnation) {
	_, _ = n.propose(&fsm.PutRevoke{V: fsm.PutRevokeV2, Key: key, Incarnation: inc})
}

func hasDFS(reps []api.ReplicaDescriptor) bool {
	for _, r := range reps {
		if r.Kind == api.ReplicaDFS {
			return true
		}
	}
	return false
}

// putLocations is locations plus, for every LOCAL_DISK replica, the write
// grant the holder checks before storing the bytes (invariant 11). A
// repeated PutStart gets fresh grants for the same incarnation and
// segments while that incarnation is still pending (checkStillPending).
func (n *Node) putLocations(key string, inc api.ObjectIncarnation, size int64, reps []api.ReplicaDescriptor, now time.Time) []api.ReplicaLocation {
	out := n.locations(reps)
	gk := n.fsm.GrantKey()
	if len(gk) != api.GrantKeyLen {
		return out
	}
	expires := now.Add(n.cfg.GrantTTL).UnixNano()
	for i := range out {
		if out[i].Kind != api.ReplicaLocalDisk {
			continue
		}
		g := grant.Sign(gk, api.WriteGrant{Segment: out[i].Segment, Key: key, Incarnation: inc, Expires: expires, Size: size})
		out[i].Grant = &g
	}
	return out
}

// maxExclude bounds PutStartRequest.Exclude.
const maxExclude = 64

// checkPut checks a put request. It depends on the request and this
// node's configuration only, never on placement, so a repeat of a request
// is checked the same way. It may set req.ReplicaNum to the default of one.
func (n *Node) checkPut(req *api.PutStartRequest) error {
	if err := api.ValidKey(req.Key); err != nil {
		return err
	}
	if req.Size < 0 {
		return api.Errorf(api.CodeInvalidParams, "negative size %d", req.Size)
	}
	if len(req.Tenant) > api.MaxTenantLen {
		return api.Errorf(api.CodeInvalidParams, "tenant of %d bytes exceeds %d", len(req.Tenant), api.MaxTenantLen)
	}
	if len(req.Exclude) > maxExclude {
		return api.Errorf(api.CodeInvalidParams, "%d excluded segments exceed %d", len(req.Exclude), maxExclude)
	}
	if err := placement.CheckPrefer(req.Prefer); err != nil {
		return err
	}
	if req.ReplicaNum == 0 && req.DFSReplicaNum == 0 {
		req.ReplicaNum = 1
	}
	if req.ReplicaNum < 0 || req.ReplicaNum > api.MaxReplicas {
		return api.Errorf(api.CodeInvalidParams, "replica_num %d outside 1..%d", req.ReplicaNum, api.MaxReplicas)
	}
	// One DFS replica at most: the DFS root is one shared filesystem, a
	// second copy in it adds no independence.
	if req.DFSReplicaNum < 0 || req.DFSReplicaNum > 1 {
		return api.Errorf(api.CodeInvalidParams, "dfs_replica_num %d outside 0..1", req.DFSReplicaNum)
	}
	if _, ok := n.fsm.DFSSettings(); req.DFSReplicaNum > 0 && (n.dfs == nil || !ok) {
		return api.Errorf(api.CodeInvalidParams, "DFS replicas are not configured on this master (%s unset or not yet configured)", dfsio.EnvRoot)
	}
	return nil
}

func (n *Node) handlePutEnd(_ context.Context, req *api.PutEndRequest) (*api.Empty, error) {
	return n.endPut(req, false)
}

func (n *Node) handlePutRevoke(_ context.Context, req *api.PutRevokeRequest) (*api.Empty, error) {
	return n.endPut(req, true)
}

func (n *Node) endPut(req *api.PutEndRequest, revoke bool) (*api.Empty, error) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	if err := api.ValidKey(req.Key); err != nil {
		return nil, err
	}
	var cmd fsm.Command = &fsm.PutEnd{V: fsm.PutEndV2, Key: req.Key, Incarnation: req.Incarnation, Session: req.Session}
	if revoke {
		cmd = &fsm.PutRevoke{V: fsm.PutRevokeV2, Key: req.Key, Incarnation: req.Incarnation, Session: req.Session}
	}
	if _, err := proposeFor[fsm.PutEndResult](n, cmd); err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}

func (n *Node) handleGet(_ context.Context, req *api.KeyRequest) (*api.GetResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	var v fsm.ObjectView
	var err error
	n.readLeased([]string{req.Key}, func() []api.ObjectRef {
		if v, err = n.fsm.Get(req.Key); err != nil {
			return nil
		}
		return []api.ObjectRef{{Key: req.Key, Incarnation: v.Incarnation}}
	})
	if err != nil {
		return nil, err
	}
	n.noteDFSRead(req.Key, v.Replicas)
	return &api.GetResponse{Object: n.objectInfo(v)}, nil
}

func (n *Node) handleBatchGet(_ context.Context, req *api.KeysRequest) (*api.BatchGetResponse, error) {
	if err := checkBatchLen(len(req.Keys), api.MaxBatchKeys, "keys"); err != nil {
		return nil, err
	}
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	out := &api.BatchGetResponse{Results: make([]api.GetResult, len(req.Keys))}
	views := make([]fsm.ObjectView, len(req.Keys))
	n.readLeased(req.Keys, func() []api.ObjectRef {
		refs := make([]api.ObjectRef, 0, len(req.Keys))
		for i, k := range req.Keys {
			v, err := n.fsm.Get(k)
			if err != nil {
				out.Results[i].Err = api.AsError(err)
				continue
			}
			views[i] = v
			refs = append(refs, api.ObjectRef{Key: k, Incarnation: v.Incarnation})
		}
		return refs
	})
	for i, k := range req.Keys {
		if out.Results[i].Err != nil {
			continue
		}
		n.noteDFSRead(k, views[i].Replicas)
		info := n.objectInfo(views[i])
		out.Results[i].Object = &info
	}
	return out, nil
}

// readLeased runs read, which reads keys from the fsm and returns the
// incarnations it will answer, and leases each of them for LeaseTTL. The
// read and the grant are one step for the fetches (tasks of keys being
// read are withheld until the grant) and for evictions (which wait for
// reads in progress and hold new ones back until their drop is applied),
// so neither can delete what the read is about to answer.
func (n *Node) readLeased(keys []string, read func() []api.ObjectRef) {
	n.soft.DropMu.RLock()
	defer n.soft.DropMu.RUnlock()
	n.soft.BeginRead(keys...)
	refs := read()
	if n.cfg.hooks.afterRead != nil {
		n.cfg.hooks.afterRead(keys)
	}
	n.soft.EndRead(keys, refs, time.Now().Add(n.cfg.LeaseTTL))
}

func (n *Node) handleExist(_ context.Context, req *api.KeysRequest) (*api.ExistResponse, error) {
	if err := checkBatchLen(len(req.Keys), api.MaxBatchKeys, "keys"); err != nil {
		return nil, err
	}
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	out := &api.ExistResponse{Exists: make([]bool, len(req.Keys))}
	for i, k := range req.Keys {
		out.Exists[i] = n.fsm.Exists(k)
	}
	return out, nil
}

// handleRemove is asynchronous (transport.AsyncHandlerFunc): it checks
// the request on the connection's read loop and queues it for the remove
// committer, which answers it with the others of its entry, so no
// goroutine waits for the commit per request (transport/request.go says
// what that cost). handleBatchRemove is not: its answer (a result per key)
// takes a msgpack encoding that the committer would then do for every
// caller between two entries, and at 16 clients × 64 keys that cost more
// than the parked goroutines (master/DESIGN.md, "Writes and group commit").
func (n *Node) handleRemove(req *api.RemoveRequest, reply func(*api.Empty, error)) {
	if err := n.requireLeaderSession(req.Session); err != nil {
		reply(nil, err)
		return
	}
	if err := api.ValidKey(req.Key); err != nil {
		reply(nil, err)
		return
	}
	var ifInc []api.ObjectIncarnation
	if req.IfIncarnation != nil {
		ifInc = []api.ObjectIncarnation{*req.IfIncarnation}
	}
	n.removes.submit([]string{req.Key}, ifInc, req.Session, func(rep removeReply) {
		switch {
		case rep.err != nil:
			reply(nil, rep.err)
		case rep.results[0].Err != nil:
			reply(nil, rep.results[0].Err)
		default:
			reply(&api.Empty{}, nil)
		}
	})
}

// handleBatchRemove answers one result per requested key in request order.
// Invalid keys are answered here and never proposed; the rest go through
// the group-commit batcher as one contiguous run, one session span. Which
// keys are invalid depends on the request alone, so a repeat proposes the
// same run.
func (n *Node) handleBatchRemove(_ context.Context, req *api.BatchRemoveRequest) (*api.BatchRemoveResponse, error) {
	if err := checkBatchLen(len(req.Keys), api.MaxBatchKeys, "keys"); err != nil {
		return nil, err
	}
	if m := api.IfIncMismatch(len(req.IfIncarnations), len(req.Keys)); m != "" {
		return nil, api.Errorf(api.CodeInvalidParams, "%s", m)
	}
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	out := &api.BatchRemoveResponse{Results: make([]api.KeyResult, len(req.Keys))}
	valid := newBatchSubset[string](len(req.Keys))
	var ifInc []api.ObjectIncarnation
	for i, k := range req.Keys {
		out.Results[i].Key = k
		if err := api.ValidKey(k); err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		valid.add(i, k)
		if len(req.IfIncarnations) != 0 {
			ifInc = append(ifInc, req.IfIncarnations[i])
		}
	}
	if len(valid.items) > 0 {
		res, err := n.removes.remove(valid.items, ifInc, req.Session)
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			out.Results[valid.at[j]].Err = r.Err
		}
	}
	return out, nil
}

func (n *Node) handleList(_ context.Context, req *api.ListRequest) (*api.ListResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	// The page itself is bounded by fsm.MaxListLimit; a prefix or cursor
	// longer than any key can only be a mistake.
	if len(req.Prefix) > api.MaxKeyLen || len(req.Cursor) > api.MaxKeyLen {
		return nil, api.Errorf(api.CodeInvalidParams, "list: prefix of %d bytes or cursor of %d bytes exceeds %d", len(req.Prefix), len(req.Cursor), api.MaxKeyLen)
	}
	views, next := n.fsm.List(req.Prefix, req.Cursor, req.Limit)
	out := &api.ListResponse{Objects: make([]api.ObjectInfo, len(views)), NextCursor: next}
	for i, v := range views {
		out.Objects[i] = n.objectInfo(v)
	}
	return out, nil
}

func (n *Node) handleStat(_ context.Context, req *api.KeyRequest) (*api.StatResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
	}
	v, pending, deletes, err := n.fsm.Stat(req.Key)
	if err != nil {
		return nil, err
	}
	return &api.StatResponse{Object: n.objectInfo(v), PendingPut: pending, PendingDeletes: deletes}, nil
}
