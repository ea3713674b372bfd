package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// handleBatchPutStart starts many puts with one PutStartBatch entry and
// answers one result per item in request order. Items that fail the
// leader's checks or placement are answered here and never proposed; a key
// named twice refuses the whole request before anything is proposed.
func (n *Node) handleBatchPutStart(ctx context.Context, req *api.BatchPutStartRequest) (*api.BatchPutStartResponse, error) {
	if len(req.Items) > api.MaxBatchPutItems {
		return nil, api.Errorf(api.CodeInvalidParams, "%d items exceed the batch limit %d", len(req.Items), api.MaxBatchPutItems)
	}
	if k, dup := fsm.DuplicateBatchKey(len(req.Items), func(i int) string { return req.Items[i].Key }); dup {
		return nil, api.Errorf(api.CodeInvalidParams, "batch put names key %q twice", k)
	}
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	now := time.Now()
	rng := placementRand(now)
	out := &api.BatchPutStartResponse{Results: make([]api.PutStartResult, len(req.Items))}
	items := make([]fsm.PutStartItem, 0, len(req.Items))
	at := make([]int, 0, len(req.Items))
	for i := range req.Items {
		r := &req.Items[i]
		reps, err := n.placePut(r, now, rng)
		if err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		items = append(items, fsm.PutStartItem{Key: r.Key, Tenant: r.Tenant, Size: r.Size, Replicas: reps, PutID: r.PutID, IfAbsent: r.IfAbsent})
		at = append(at, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	res, err := n.propose(&fsm.PutStartBatch{V: fsm.PutStartBatchV1, Items: items, Now: now.UnixNano()})
	if err != nil {
		return nil, err
	}
	br := res.(*fsm.PutStartBatchResult)
	if br.Err != nil {
		return nil, br.Err
	}
	// Every DFS unit of the batch must have its file before a client
	// writes; one wait covers them all.
	var dfsReps []api.ReplicaDescriptor
	for j, r := range br.Items {
		if r.Err == nil && req.Items[at[j]].DFSReplicaNum > 0 {
			dfsReps = append(dfsReps, r.Replicas...)
		}
	}
	var waitErr error
	if len(dfsReps) > 0 {
		waitErr = n.dfsWaitReady(ctx, dfsReps)
	}
	for j, r := range br.Items {
		i := at[j]
		switch {
		case r.Err != nil:
			out.Results[i].Err = r.Err
		case waitErr != nil && req.Items[i].DFSReplicaNum > 0:
			_, _ = n.propose(&fsm.PutRevoke{V: fsm.PutRevokeV1, Key: items[j].Key, Incarnation: r.Incarnation, Now: time.Now().UnixNano()})
			out.Results[i].Err = api.AsError(waitErr)
		default:
			out.Results[i] = api.PutStartResult{Incarnation: r.Incarnation, Replicas: n.locations(r.Replicas)}
		}
	}
	return out, nil
}

// handleBatchPutEnd completes many pending puts with one PutEndBatch entry,
// one result per item in request order.
func (n *Node) handleBatchPutEnd(_ context.Context, req *api.BatchPutEndRequest) (*api.BatchPutEndResponse, error) {
	if len(req.Items) > api.MaxBatchPutItems {
		return nil, api.Errorf(api.CodeInvalidParams, "%d items exceed the batch limit %d", len(req.Items), api.MaxBatchPutItems)
	}
	if err := n.requireLeader(); err != nil {
		return nil, err
	}
	out := &api.BatchPutEndResponse{Results: make([]api.KeyResult, len(req.Items))}
	items := make([]fsm.PutEndItem, 0, len(req.Items))
	at := make([]int, 0, len(req.Items))
	for i, r := range req.Items {
		out.Results[i].Key = r.Key
		if err := api.ValidKey(r.Key); err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		items = append(items, fsm.PutEndItem{Key: r.Key, Incarnation: r.Incarnation})
		at = append(at, i)
	}
	if len(items) == 0 {
		return out, nil
	}
	res, err := n.propose(&fsm.PutEndBatch{V: fsm.PutEndBatchV1, Items: items, Now: time.Now().UnixNano()})
	if err != nil {
		return nil, err
	}
	br := res.(*fsm.PutEndBatchResult)
	if br.Err != nil {
		return nil, br.Err
	}
	for j, r := range br.Items {
		out.Results[at[j]].Err = r.Err
	}
	return out, nil
}
