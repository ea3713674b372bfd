package client

import (
	"context"

	"sexton/api"
)

// BatchPutStart starts up to api.MaxBatchPutItems puts in one Raft entry
// and answers one result per item, in order. It carries a session like
// every mutation here, so a retry through a leader change answers the
// first attempt's result instead of starting the puts again.
//
// It writes no bytes: the caller writes each item's replicas (and revokes
// what it gives up on) before BatchPutEnd. sexton bench uses it with
// simulated holders, which need no bytes.
func (c *Client) BatchPutStart(ctx context.Context, items []api.PutStartRequest) ([]api.PutStartResult, error) {
	return mutateBatch[api.PutStartRequest, api.PutStartResult](ctx, c, api.MethodBatchPutStart, items)
}

// PutGrant asks the leader for a one-commit put's incarnation and write
// grants (LOCAL_DISK replicas only); it commits nothing. The caller writes
// each replica and commits with BatchPutCommit (or gives the grant up:
// the bytes are reclaimed once the grant's block expired).
func (c *Client) PutGrant(ctx context.Context, req api.PutStartRequest) (api.PutStartResponse, error) {
	var g api.PutStartResponse
	err := c.masters.Call(ctx, api.MethodPutGrant, &req, &g)
	return g, err
}

// BatchPutCommit commits up to api.MaxBatchPutItems granted, written puts
// in one Raft entry, one result per item in order, with a session (see
// BatchPutStart). An item answered INCARNATION_STALE must be granted and
// written again.
func (c *Client) BatchPutCommit(ctx context.Context, items []api.PutCommitRequest) ([]api.KeyResult, error) {
	return mutateBatch[api.PutCommitRequest, api.KeyResult](ctx, c, api.MethodBatchPutCommit, items)
}

// BatchPutEnd completes up to api.MaxBatchPutItems pending puts in one Raft
// entry, one result per item in order, with a session (see BatchPutStart).
func (c *Client) BatchPutEnd(ctx context.Context, items []api.PutEndRequest) ([]api.KeyResult, error) {
	return mutateBatch[api.PutEndRequest, api.KeyResult](ctx, c, api.MethodBatchPutEnd, items)
}

// mutateBatch sends a batch mutation with a session and answers its
// results, refusing an answer that does not have one per item.
func mutateBatch[I, R any](ctx context.Context, c *Client, method string, items []I) ([]R, error) {
	req := api.BatchRequest[I]{Items: items}
	var resp api.BatchResponse[R]
	if err := c.mutate(ctx, method, &req, func(s api.Session) { req.Session = s }, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, api.Errorf(api.CodeInternal, "%s answered %d results for %d items", method, len(resp.Results), len(items))
	}
	return resp.Results, nil
}
