package master

import (
	"context"
	"math/rand/v2"
	"time"

	"sexton/api"
	"sexton/fsm"
	"sexton/master/dfsio"
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
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	now := time.Now()
	reps, err := n.placePut(req, now, placementRand(now))
	if err != nil {
		return nil, err
	}
	res, err := n.propose(&fsm.PutStart{V: fsm.PutStartV1, Key: req.Key, Tenant: req.Tenant, Size: req.Size,
		Replicas: reps, PutID: req.PutID, IfAbsent: req.IfAbsent, Now: now.UnixNano()})
	if err != nil {
		return nil, err
	}
	r := res.(*fsm.PutStartResult)
	if r.Err != nil {
		return nil, r.Err
	}
	reps = r.Replicas
	if req.DFSReplicaNum > 0 {
		if err := n.dfsWaitReady(ctx, reps); err != nil {
			_, _ = n.propose(&fsm.PutRevoke{V: fsm.PutRevokeV1, Key: req.Key, Incarnation: r.Incarnation, Now: time.Now().UnixNano()})
			return nil, err
		}
	}
	return &api.PutStartResponse{Incarnation: r.Incarnation, Replicas: n.locations(reps)}, nil
}

// placementRand is the leader's placement randomness for puts started at now.
func placementRand(now time.Time) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(now.UnixNano()), 0x5e))
}

// placePut checks a put request and chooses its replicas: LOCAL_DISK
// segments by placement, DFS replicas left for the state to allocate. It
// may set req.ReplicaNum to the default of one.
func (n *Node) placePut(req *api.PutStartRequest, now time.Time, rng *rand.Rand) ([]api.ReplicaDescriptor, error) {
	if err := api.ValidKey(req.Key); err != nil {
		return nil, err
	}
	if req.Size < 0 {
		return nil, api.Errorf(api.CodeInvalidParams, "negative size %d", req.Size)
	}
	if len(req.Tenant) > api.MaxTenantLen {
		return nil, api.Errorf(api.CodeInvalidParams, "tenant of %d bytes exceeds %d", len(req.Tenant), api.MaxTenantLen)
	}
	if req.ReplicaNum == 0 && req.DFSReplicaNum == 0 {
		req.ReplicaNum = 1
	}
	if req.ReplicaNum < 0 || req.ReplicaNum > api.MaxReplicas {
		return nil, api.Errorf(api.CodeInvalidParams, "replica_num %d outside 1..%d", req.ReplicaNum, api.MaxReplicas)
	}
	// One DFS replica at most: the DFS root is one shared filesystem, a
	// second copy in it adds no independence.
	if req.DFSReplicaNum < 0 || req.DFSReplicaNum > 1 {
		return nil, api.Errorf(api.CodeInvalidParams, "dfs_replica_num %d outside 0..1", req.DFSReplicaNum)
	}
	if _, ok := n.fsm.DFSSettings(); req.DFSReplicaNum > 0 && (n.dfs == nil || !ok) {
		return nil, api.Errorf(api.CodeInvalidParams, "DFS replicas are not configured on this master (%s unset or not yet configured)", dfsio.EnvRoot)
	}
	var reps []api.ReplicaDescriptor
	if req.ReplicaNum > 0 {
		segs, err := place(n.fsm.Segments(), n.soft, n.cfg.HolderTTL, now, req.Size, req.ReplicaNum, req.Pool, rng)
		if err != nil {
			return nil, err
		}
		for _, s := range segs {
			reps = append(reps, api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: s.ID, Pool: s.Pool})
		}
	}
	for i := 0; i < req.DFSReplicaNum; i++ {
		reps = append(reps, api.ReplicaDescriptor{Kind: api.ReplicaDFS}) // the state allocates it
	}
	return reps, nil
}

func (n *Node) handlePutEnd(_ context.Context, req *api.PutEndRequest) (*api.Empty, error) {
	return n.endPut(req, false)
}

func (n *Node) handlePutRevoke(_ context.Context, req *api.PutRevokeRequest) (*api.Empty, error) {
	return n.endPut(req, true)
}

func (n *Node) endPut(req *api.PutEndRequest, revoke bool) (*api.Empty, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if err := api.ValidKey(req.Key); err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	var cmd fsm.Command = &fsm.PutEnd{V: fsm.PutEndV1, Key: req.Key, Incarnation: req.Incarnation, Now: now}
	if revoke {
		cmd = &fsm.PutRevoke{V: fsm.PutRevokeV1, Key: req.Key, Incarnation: req.Incarnation, Now: now}
	}
	res, err := n.propose(cmd)
	if err != nil {
		return nil, err
	}
	if r := res.(*fsm.PutEndResult); r.Err != nil {
		return nil, r.Err
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
	if len(req.Keys) > api.MaxBatchKeys {
		return nil, api.Errorf(api.CodeInvalidParams, "%d keys exceed the batch limit %d", len(req.Keys), api.MaxBatchKeys)
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
	n.soft.dropMu.RLock()
	defer n.soft.dropMu.RUnlock()
	n.soft.beginRead(keys...)
	refs := read()
	if testHookAfterRead != nil {
		testHookAfterRead(keys)
	}
	n.soft.endRead(keys, refs, time.Now().Add(n.cfg.LeaseTTL))
}

// testHookAfterRead, when set by a test, runs between a Get's fsm read and
// its lease grant.
var testHookAfterRead func(keys []string)

func (n *Node) handleExist(_ context.Context, req *api.KeysRequest) (*api.ExistResponse, error) {
	if len(req.Keys) > api.MaxBatchKeys {
		return nil, api.Errorf(api.CodeInvalidParams, "%d keys exceed the batch limit %d", len(req.Keys), api.MaxBatchKeys)
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

func (n *Node) handleRemove(_ context.Context, req *api.KeyRequest) (*api.Empty, error) {
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	if err := api.ValidKey(req.Key); err != nil {
		return nil, err
	}
	res, err := n.removes.remove([]string{req.Key})
	if err != nil {
		return nil, err
	}
	if res[0].Err != nil {
		return nil, res[0].Err
	}
	return &api.Empty{}, nil
}

// handleBatchRemove answers one result per requested key in request order.
// Invalid keys are answered here and never proposed; the rest go through
// the group-commit batcher as one contiguous run.
func (n *Node) handleBatchRemove(_ context.Context, req *api.KeysRequest) (*api.BatchRemoveResponse, error) {
	if len(req.Keys) > api.MaxBatchKeys {
		return nil, api.Errorf(api.CodeInvalidParams, "%d keys exceed the batch limit %d", len(req.Keys), api.MaxBatchKeys)
	}
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	out := &api.BatchRemoveResponse{Results: make([]api.KeyResult, len(req.Keys))}
	valid := make([]string, 0, len(req.Keys))
	at := make([]int, 0, len(req.Keys))
	for i, k := range req.Keys {
		out.Results[i].Key = k
		if err := api.ValidKey(k); err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		valid = append(valid, k)
		at = append(at, i)
	}
	if len(valid) > 0 {
		res, err := n.removes.remove(valid)
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			out.Results[at[j]].Err = r.Err
		}
	}
	return out, nil
}

func (n *Node) handleList(_ context.Context, req *api.ListRequest) (*api.ListResponse, error) {
	if err := n.linearizable(); err != nil {
		return nil, err
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
