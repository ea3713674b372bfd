package client

import (
	"context"

	"sexton/api"
)

// Stat describes the key's newest value, its pending put and pending
// deletes.
func (c *Client) Stat(ctx context.Context, key string) (api.StatResponse, error) {
	var resp api.StatResponse
	err := c.Call(ctx, api.MethodStat, &api.KeyRequest{Key: key}, &resp)
	return resp, err
}

// List pages through objects whose key starts with prefix, strictly after
// cursor; the returned cursor is empty on the last page.
func (c *Client) List(ctx context.Context, prefix, cursor string, limit int) ([]api.ObjectInfo, string, error) {
	var resp api.ListResponse
	err := c.Call(ctx, api.MethodList, &api.ListRequest{Prefix: prefix, Cursor: cursor, Limit: limit}, &resp)
	return resp.Objects, resp.NextCursor, err
}

// Status is the answering master's view of the cluster.
func (c *Client) Status(ctx context.Context) (api.StatusResponse, error) {
	var resp api.StatusResponse
	err := c.Call(ctx, api.MethodStatus, &api.Empty{}, &resp)
	return resp, err
}

// Settings are the cluster's replicated settings.
func (c *Client) Settings(ctx context.Context) (api.SettingsResponse, error) {
	var resp api.SettingsResponse
	err := c.Call(ctx, api.MethodSettingsGet, &api.Empty{}, &resp)
	return resp, err
}

// SetSettings changes the replicated settings; zero fields stay as they are.
func (c *Client) SetSettings(ctx context.Context, s api.Settings) (api.SettingsResponse, error) {
	req := api.SettingsSetRequest{Settings: s}
	var resp api.SettingsResponse
	err := c.mutate(ctx, api.MethodSettingsSet, &req, func(s api.Session) { req.Session = s }, &resp)
	return resp, err
}
