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
	req := api.BatchPutStartRequest{Items: items}
	var resp api.BatchPutStartResponse
	if err := c.mutate(ctx, api.MethodBatchPutStart, &req, func(s api.Session) { req.Session = s }, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, api.Errorf(api.CodeInternal, "BatchPutStart answered %d results for %d items", len(resp.Results), len(items))
	}
	return resp.Results, nil
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
	req := api.BatchPutCommitRequest{Items: items}
	var resp api.BatchPutEndResponse
	if err := c.mutate(ctx, api.MethodBatchPutCommit, &req, func(s api.Session) { req.Session = s }, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, api.Errorf(api.CodeInternal, "BatchPutCommit answered %d results for %d items", len(resp.Results), len(items))
	}
	return resp.Results, nil
}

// BatchPutEnd completes up to api.MaxBatchPutItems pending puts in one Raft
// entry, one result per item in order, with a session (see BatchPutStart).
func (c *Client) BatchPutEnd(ctx context.Context, items []api.PutEndRequest) ([]api.KeyResult, error) {
	req := api.BatchPutEndRequest{Items: items}
	var resp api.BatchPutEndResponse
	if err := c.mutate(ctx, api.MethodBatchPutEnd, &req, func(s api.Session) { req.Session = s }, &resp); err != nil {
		return nil, err
	}
	if len(resp.Results) != len(items) {
		return nil, api.Errorf(api.CodeInternal, "BatchPutEnd answered %d results for %d items", len(resp.Results), len(items))
	}
	return resp.Results, nil
}
