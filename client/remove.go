package client

import (
	"context"

	"sexton/api"
)

// RemoveOption shapes a Remove.
type RemoveOption func(*api.RemoveRequest)

// IfIncarnation makes a Remove conditional: it fails with
// INCARNATION_MISMATCH, changing nothing, unless the key's newest value is
// exactly that incarnation.
func IfIncarnation(inc api.ObjectIncarnation) RemoveOption {
	return func(r *api.RemoveRequest) { r.IfIncarnation = &inc }
}

// Remove deletes key. nil means the delete is committed: no read returns
// the removed value again, and its bytes are tombstoned and reclaimed in
// the background. OUTCOME_UNKNOWN means the client gave up not knowing
// whether the remove ran.
func (c *Client) Remove(ctx context.Context, key string, opts ...RemoveOption) error {
	req := api.RemoveRequest{Key: key}
	for _, o := range opts {
		o(&req)
	}
	return c.mutate(ctx, api.MethodRemove, &req, func(s api.Session) { req.Session = s }, nil)
}

// BatchRemove deletes many keys, api.MaxBatchKeys per Raft entry; the
// answer has one result per key in order, duplicates included. ifIncs is
// nil or has one entry per key (a zero incarnation: unconditional);
// RemoveItems takes each key with its condition instead. An error means
// the results of the chunk it names and of every later chunk are unknown.
func (c *Client) BatchRemove(ctx context.Context, keys []string, ifIncs []api.ObjectIncarnation) ([]api.KeyResult, error) {
	if m := api.IfIncMismatch(len(ifIncs), len(keys)); m != "" {
		return nil, api.Errorf(api.CodeInvalidParams, "%s", m)
	}
	items := make([]api.RemoveItem, len(keys))
	for i, k := range keys {
		items[i].Key = k
		if len(ifIncs) != 0 {
			items[i].IfInc = ifIncs[i]
		}
	}
	return c.RemoveItems(ctx, items)
}

// RemoveItems deletes many keys, each unless its incarnation is not
// IfInc (zero: unconditional), api.MaxBatchKeys per Raft entry; the
// answer has one result per item in order, duplicates included. An error
// means the results of the chunk it names and of every later chunk are
// unknown.
func (c *Client) RemoveItems(ctx context.Context, items []api.RemoveItem) ([]api.KeyResult, error) {
	out := make([]api.KeyResult, 0, len(items))
	for start := 0; start < len(items); start += api.MaxBatchKeys {
		chunk := items[start:min(start+api.MaxBatchKeys, len(items))]
		req := api.BatchRemoveRequest{Keys: make([]string, len(chunk))}
		conditional := false
		for i, it := range chunk {
			req.Keys[i] = it.Key
			conditional = conditional || it.IfInc != (api.ObjectIncarnation{})
		}
		// The wire carries the conditions as a slice parallel to the keys,
		// left out when every remove of the chunk is unconditional.
		if conditional {
			req.IfIncarnations = make([]api.ObjectIncarnation, len(chunk))
			for i, it := range chunk {
				req.IfIncarnations[i] = it.IfInc
			}
		}
		var resp api.BatchRemoveResponse
		if err := c.mutate(ctx, api.MethodBatchRemove, &req, func(s api.Session) { req.Session = s }, &resp); err != nil {
			return out, err
		}
		if len(resp.Results) != len(req.Keys) {
			return out, api.Errorf(api.CodeInternal, "BatchRemove answered %d results for %d keys", len(resp.Results), len(req.Keys))
		}
		out = append(out, resp.Results...)
	}
	return out, nil
}
