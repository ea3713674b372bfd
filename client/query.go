package client

import (
	"context"
	"fmt"
	"time"

	"sexton/internal/ctxsleep"

	"sexton/api"
	"sexton/transport"
)

// ask makes a call that changes nothing and returns its answer, a T.
func ask[T any](ctx context.Context, c *Client, method string, req any) (T, error) {
	var resp T
	err := c.Call(ctx, method, req, &resp)
	return resp, err
}

// Stat describes the key's newest value, its pending put and pending
// deletes.
func (c *Client) Stat(ctx context.Context, key string) (api.StatResponse, error) {
	return ask[api.StatResponse](ctx, c, api.MethodStat, &api.KeyRequest{Key: key})
}

// Exist reports, per key in order, whether it holds a complete value: one
// Exist call per api.MaxBatchKeys keys (Mooncake's batch_is_exist).
func (c *Client) Exist(ctx context.Context, keys []string) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for lo := 0; lo < len(keys); lo += api.MaxBatchKeys {
		chunk := keys[lo:min(lo+api.MaxBatchKeys, len(keys))]
		var resp api.ExistResponse
		if err := c.Call(ctx, api.MethodExist, &api.KeysRequest{Keys: chunk}, &resp); err != nil {
			return nil, err
		}
		if len(resp.Exists) != len(chunk) {
			return nil, api.Errorf(api.CodeInternal, "Exist answered %d results for %d keys", len(resp.Exists), len(chunk))
		}
		out = append(out, resp.Exists...)
	}
	return out, nil
}

// List pages through objects whose key starts with prefix, strictly after
// cursor; the returned cursor is empty on the last page.
func (c *Client) List(ctx context.Context, prefix, cursor string, limit int) ([]api.ObjectInfo, string, error) {
	resp, err := ask[api.ListResponse](ctx, c, api.MethodList, &api.ListRequest{Prefix: prefix, Cursor: cursor, Limit: limit})
	return resp.Objects, resp.NextCursor, err
}

// ListPage is the page ListAll asks for: well under the master's bound
// (fsm.MaxListLimit) and a frame's worth of typical objects.
const ListPage = 1000

// ListAll lists the objects whose key starts with prefix, a page of
// ListPage at a time, each page's call bounded by pageTimeout, up to
// limit of them (0: all).
func (c *Client) ListAll(prefix string, limit int, pageTimeout time.Duration) ([]api.ObjectInfo, error) {
	var all []api.ObjectInfo
	cursor := ""
	for {
		pageSize := ListPage
		if limit > 0 {
			pageSize = min(pageSize, limit-len(all))
		}
		ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
		page, next, err := c.List(ctx, prefix, cursor, pageSize)
		cancel()
		if err != nil {
			return all, err
		}
		all = append(all, page...)
		if next == "" || (limit > 0 && len(all) >= limit) {
			break
		}
		cursor = next
	}
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// StatusOf asks the master at addr for its own view, whichever its role
// (Status asks whichever master answers), dialing it with cc.
func StatusOf(ctx context.Context, addr string, cc transport.ClientConfig) (api.StatusResponse, error) {
	var st api.StatusResponse
	conn, err := transport.Dial(ctx, addr, cc)
	if err != nil {
		return st, err
	}
	defer conn.Close()
	err = conn.Call(ctx, api.MethodStatus, &api.Empty{}, &st)
	return st, err
}

// EachStatus asks every master at addrs for its own view (StatusOf),
// each within perMaster: the answers in order ([] for none), and for each
// master that did not answer an error naming it.
func EachStatus(addrs []string, cc transport.ClientConfig, perMaster time.Duration) ([]api.StatusResponse, []error) {
	rows := []api.StatusResponse{}
	var errs []error
	for _, addr := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), perMaster)
		st, err := StatusOf(ctx, addr, cc)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		rows = append(rows, st)
	}
	return rows, errs
}

// Status is the answering master's view of the cluster.
func (c *Client) Status(ctx context.Context) (api.StatusResponse, error) {
	return ask[api.StatusResponse](ctx, c, api.MethodStatus, &api.Empty{})
}

// Settings are the cluster's replicated settings.
func (c *Client) Settings(ctx context.Context) (api.SettingsResponse, error) {
	return ask[api.SettingsResponse](ctx, c, api.MethodSettingsGet, &api.Empty{})
}

// SetSettings changes the replicated settings; zero fields stay as they are.
func (c *Client) SetSettings(ctx context.Context, s api.Settings) (api.SettingsResponse, error) {
	req := api.SettingsSetRequest{Settings: s}
	var resp api.SettingsResponse
	err := c.mutate(ctx, api.MethodSettingsSet, &req, func(s api.Session) { req.Session = s }, &resp)
	return resp, err
}

// PendingDeletes lists the key's delete tasks still waiting for a holder's
// acknowledgement (every incarnation, every segment).
func (c *Client) PendingDeletes(ctx context.Context, key string) ([]api.LocalDeleteTask, error) {
	resp, err := c.DeleteProgress(ctx, key)
	return resp.Tasks, err
}

// DeleteProgress lists the key's pending delete tasks (every incarnation,
// every segment) and, from a master that knows it, where each stands:
// Progress[i] describes Tasks[i] (its holder, state, attempts, last error).
// A task no longer listed was acknowledged.
func (c *Client) DeleteProgress(ctx context.Context, key string) (api.ListTasksResponse, error) {
	return ask[api.ListTasksResponse](ctx, c, api.MethodListTasks, &api.ListTasksRequest{Key: key})
}

// WaitDeleted waits until no delete task of the key remains pending — of
// incarnation inc only, or of any incarnation when inc is zero: the holders
// have durably tombstoned those bytes (their space comes back with GC). It
// polls, backing off to a quarter second, until ctx ends.
func (c *Client) WaitDeleted(ctx context.Context, key string, inc api.ObjectIncarnation) error {
	pause := 5 * time.Millisecond
	for {
		tasks, err := c.PendingDeletes(ctx, key)
		if err != nil {
			return err
		}
		pending := 0
		for _, t := range tasks {
			if inc.IsZero() || t.Incarnation == inc {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if !ctxsleep.Sleep(ctx, pause) {
			return api.Errorf(api.CodeTimeout, "%s: %d delete tasks still pending: %v", key, pending, ctx.Err())
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// DFSConfig is the cluster's DFS settings as the leader publishes them (a
// DFS data path compares its own with these before its first I/O).
func (c *Client) DFSConfig(ctx context.Context) (api.DFSConfigResponse, error) {
	return ask[api.DFSConfigResponse](ctx, c, api.MethodDFSConfig, &api.Empty{})
}

// DFSStatus is the DFS allocator's state: settings, space, units.
func (c *Client) DFSStatus(ctx context.Context) (api.DFSStatusResponse, error) {
	return ask[api.DFSStatusResponse](ctx, c, api.MethodDFSStatus, &api.Empty{})
}
