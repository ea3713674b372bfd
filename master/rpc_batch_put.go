package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
)

// handleBatchPutStart starts many puts with one PutStartBatch entry and
// answers one result per item in request order. Items that fail the
// leader's checks are answered here and never proposed; a key named twice
// refuses the whole request before anything is proposed.
//
// Items that cannot be placed are answered with the placement error. In a
// request without a session they are left out of the entry; in a sessioned
// one they are proposed without replicas (the fsm refuses them), so the
// entry's items depend on the request alone and a repeat's answer from
// the session table lines up item by item with the request, whatever
// placement says this time.
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
	if err := req.Session.Valid(); err != nil {
		return nil, err
	}
	sessioned := !req.Session.IsZero()
	now := time.Now()
	rng := placementRand(now)
	out := &api.BatchPutStartResponse{Results: make([]api.PutStartResult, len(req.Items))}
	items := make([]fsm.PutStartItem, 0, len(req.Items))
	at := make([]int, 0, len(req.Items))
	placeErrs := make([]error, 0, len(req.Items))
	placed := 0
	for i := range req.Items {
		r := &req.Items[i]
		if err := n.checkPut(r); err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		reps, err := n.placeReplicas(r, now, rng)
		if err != nil && !sessioned {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		if err == nil {
			placed++
		}
		items = append(items, fsm.PutStartItem{Key: r.Key, Tenant: r.Tenant, Size: r.Size, Replicas: reps, PutID: r.PutID, IfAbsent: r.IfAbsent})
		at = append(at, i)
		placeErrs = append(placeErrs, err)
	}
	if len(items) == 0 || (!sessioned && placed == 0) {
		for j, i := range at {
			out.Results[i].Err = api.AsError(placeErrs[j])
		}
		return out, nil
	}
	res, err := n.propose(&fsm.PutStartBatch{V: fsm.PutStartBatchV2, Items: items, Session: req.Session, Now: now.UnixNano()})
	if err != nil {
		return nil, err
	}
	br := res.(*fsm.PutStartBatchResult)
	n.metrics.noteDuplicate(fsm.CmdPutStartBatch, br.Duplicate)
	if br.Err != nil {
		return nil, br.Err
	}
	if len(br.Items) != len(items) {
		return nil, api.Errorf(api.CodeInternal, "put batch result of %d items for %d proposed", len(br.Items), len(items))
	}
	// Every DFS unit of the batch must have its file before a client
	// writes; one wait covers them all.
	var dfsReps []api.ReplicaDescriptor
	for _, r := range br.Items {
		if r.Err == nil && hasDFS(r.Replicas) {
			dfsReps = append(dfsReps, r.Replicas...)
		}
	}
	var waitErr error
	if len(dfsReps) > 0 {
		waitErr = n.dfsWaitReady(ctx, dfsReps)
	}
	answered := time.Now()
	for j, r := range br.Items {
		i := at[j]
		switch {
		case r.Err != nil && placeErrs[j] != nil:
			out.Results[i].Err = api.AsError(placeErrs[j])
		case r.Err != nil:
			out.Results[i].Err = r.Err
		case waitErr != nil && hasDFS(r.Replicas):
			if !br.Duplicate {
				n.revokeLeader(items[j].Key, r.Incarnation)
			}
			out.Results[i].Err = api.AsError(waitErr)
		default:
			out.Results[i] = api.PutStartResult{Incarnation: r.Incarnation, Replicas: n.putLocations(items[j].Key, r.Incarnation, r.Replicas, answered)}
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
	if err := req.Session.Valid(); err != nil {
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
	res, err := n.propose(&fsm.PutEndBatch{V: fsm.PutEndBatchV2, Items: items, Session: req.Session, Now: time.Now().UnixNano()})
	if err != nil {
		return nil, err
	}
	br := res.(*fsm.PutEndBatchResult)
	n.metrics.noteDuplicate(fsm.CmdPutEndBatch, br.Duplicate)
	if br.Err != nil {
		return nil, br.Err
	}
	if len(br.Items) != len(items) {
		return nil, api.Errorf(api.CodeInternal, "put-end batch result of %d items for %d proposed", len(br.Items), len(items))
	}
	for j, r := range br.Items {
		out.Results[at[j]].Err = r.Err
	}
	return out, nil
}
