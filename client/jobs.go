package client

import (
	"context"
	"fmt"
	"time"

	"sexton/api"
)

// StartPrefixDelete starts a bulk delete of every key under prefix that
// exists now: whose put was acknowledged before the job started. A key
// whose put is acknowledged later stays, even if that put began before
// the job. An empty prefix needs all, which deletes every key. The start
// is refused (UNAVAILABLE) while more puts are in progress under prefix
// than the job can track (api.MaxJobKeptBytes); retry later.
func (c *Client) StartPrefixDelete(ctx context.Context, prefix string, all bool) (api.JobInfo, error) {
	req := api.JobStartRequest{Prefix: prefix, All: all}
	var resp api.JobStartResponse
	err := c.mutate(ctx, api.MethodJobStart, &req, func(s api.Session) { req.Session = s }, &resp)
	return resp.Job, err
}

// Jobs lists the bulk-delete jobs the cluster keeps.
func (c *Client) Jobs(ctx context.Context) (api.JobListResponse, error) {
	return ask[api.JobListResponse](ctx, c, api.MethodJobList, &api.Empty{})
}

// CancelJob cancels a bulk-delete job.
func (c *Client) CancelJob(ctx context.Context, id uint64) (api.JobInfo, error) {
	req := api.JobCancelRequest{ID: id}
	var resp api.JobCancelResponse
	err := c.mutate(ctx, api.MethodJobCancel, &req, func(s api.Session) { req.Session = s }, &resp)
	return resp.Job, err
}

// WaitJob polls job id until it is no longer active (done or cancelled)
// or ctx ends, calling progress (if set) with each state seen.
func (c *Client) WaitJob(ctx context.Context, id uint64, progress func(api.JobInfo)) (api.JobInfo, error) {
	for {
		resp, err := c.Jobs(ctx)
		if err != nil {
			return api.JobInfo{}, err
		}
		var found *api.JobInfo
		for i := range resp.Jobs {
			if resp.Jobs[i].ID == id {
				found = &resp.Jobs[i]
			}
		}
		if found == nil {
			return api.JobInfo{}, fmt.Errorf("job %d is not among the jobs the cluster keeps", id)
		}
		if progress != nil {
			progress(*found)
		}
		if !found.Active() {
			return *found, nil
		}
		select {
		case <-ctx.Done():
			return *found, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
