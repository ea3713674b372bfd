package master

import (
	"context"
	"time"

	"sexton/api"
	"sexton/fsm"
	"sexton/master/policy/placement"
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
// placement says this time; such an item, first time or repeat, is
// answered with the placement error, which depends on the item alone. An
// item whose put is no longer pending (a repeat after a revoke) gets no
// grants (checkStillPending).
func (n *Node) handleBatchPutStart(ctx context.Context, req *api.BatchPutStartRequest) (*api.BatchPutStartResponse, error) {
	if err := checkBatchLen(len(req.Items), api.MaxBatchPutItems, "items"); err != nil {
		return nil, err
	}
	if k, dup := fsm.DuplicateBatchKey(len(req.Items), func(i int) string { return req.Items[i].Key }); dup {
		return nil, api.Errorf(api.CodeInvalidParams, "batch put names key %q twice", k)
	}
	if err := n.requireLeaderSession(req.Session); err != nil {
		return nil, err
	}
	sessioned := !req.Session.IsZero()
	now := time.Now()
	rng := placementRand(now)
	out := &api.BatchPutStartResponse{Results: make([]api.PutStartResult, len(req.Items))}
	items := newBatchSubset[fsm.PutStartItem](len(req.Items))
	placeErrs := make([]error, 0, len(req.Items)) // one per proposed item
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
		items.add(i, startItem(r, reps))
		placeErrs = append(placeErrs, err)
	}
	if len(items.items) == 0 || (!sessioned && placed == 0) {
		for j, i := range items.at {
			out.Results[i].Err = api.AsError(placeErrs[j])
		}
		return out, nil
	}
	br, err := proposeFor[fsm.PutStartBatchResult](n, &fsm.PutStartBatch{V: fsm.PutStartBatchV2, Items: items.items, Session: req.Session, Now: now.UnixNano()})
	if err != nil {
		return nil, err
	}
	if err := items.checkAnswers(len(br.Items), "put batch"); err != nil {
		return nil, err
	}
	// An item no longer pending (a repeat of a put revoked or ended since)
	// gets no grants and no DFS wait.
	gone := make([]*api.Error, len(br.Items))
	for j, r := range br.Items {
		if r.Err == nil {
			gone[j] = n.checkStillPending(items.items[j].Key, r.Incarnation)
		}
	}
	// Every DFS unit of the batch must have its file before a client
	// writes; one wait covers them all.
	var dfsReps []api.ReplicaDescriptor
	for j, r := range br.Items {
		if r.Err == nil && gone[j] == nil && hasDFS(r.Replicas) {
			dfsReps = append(dfsReps, r.Replicas...)
		}
	}
	var waitErr error
	if len(dfsReps) > 0 {
		waitErr = n.dfsWaitReady(ctx, dfsReps)
	}
	answered := time.Now()
	for j, r := range br.Items {
		i := items.at[j]
		it := &items.items[j]
		switch {
		case fsm.IsUnplaced(r.Err):
			// Unplaced, the first time or in the answer a repeat gets
			// from the session table: the same placement error.
			out.Results[i].Err = placement.NoPlacement(req.Items[i].ReplicaNum, it.Size)
		case r.Err != nil:
			out.Results[i].Err = r.Err
		case gone[j] != nil:
			out.Results[i].Err = gone[j]
		case waitErr != nil && hasDFS(r.Replicas):
			if !br.Duplicate {
				n.revokeLeader(items.items[j].Key, r.Incarnation)
			}
			out.Results[i].Err = api.AsError(waitErr)
		default:
			out.Results[i] = api.PutStartResult{Incarnation: r.Incarnation, Replicas: n.putLocations(items.items[j].Key, r.Incarnation, items.items[j].Size, r.Replicas, answered)}
		}
	}
	return out, nil
}

// openPutEndBatch checks a batch of count puts to end or commit under
// session (within api.MaxBatchPutItems, on the leader) and makes its
// answer, one result per item.
func (n *Node) openPutEndBatch(count int, session api.Session) (*api.BatchPutEndResponse, error) {
	if err := checkBatchLen(count, api.MaxBatchPutItems, "items"); err != nil {
		return nil, err
	}
	if err := n.requireLeaderSession(session); err != nil {
		return nil, err
	}
	return &api.BatchPutEndResponse{Results: make([]api.KeyResult, count)}, nil
}

// handleBatchPutEnd completes many pending puts with one PutEndBatch entry,
// one result per item in request order.
func (n *Node) handleBatchPutEnd(_ context.Context, req *api.BatchPutEndRequest) (*api.BatchPutEndResponse, error) {
	out, err := n.openPutEndBatch(len(req.Items), req.Session)
	if err != nil {
		return nil, err
	}
	items := newBatchSubset[fsm.PutEndItem](len(req.Items))
	for i, r := range req.Items {
		out.Results[i].Key = r.Key
		if err := api.ValidKey(r.Key); err != nil {
			out.Results[i].Err = api.AsError(err)
			continue
		}
		items.add(i, fsm.PutEndItem{Key: r.Key, Incarnation: r.Incarnation})
	}
	return proposeEndBatch(n, items, &fsm.PutEndBatch{V: fsm.PutEndBatchV2, Items: items.items, Session: req.Session}, "put-end batch", out)
}

// proposeEndBatch proposes cmd, an entry of the items of sub (nothing
// when sub is empty), and answers each proposed item in out in request
// order.
func proposeEndBatch[T any](n *Node, sub *batchSubset[T], cmd fsm.Command, what string, out *api.BatchPutEndResponse) (*api.BatchPutEndResponse, error) {
	if len(sub.items) == 0 {
		return out, nil
	}
	br, err := proposeFor[fsm.PutEndBatchResult](n, cmd)
	if err != nil {
		return nil, err
	}
	if err := sub.checkAnswers(len(br.Items), what); err != nil {
		return nil, err
	}
	for j, r := range br.Items {
		out.Results[sub.at[j]].Err = r.Err
	}
	return out, nil
}
