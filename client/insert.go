package client

import (
	"context"
	"time"

	"sexton/internal/ctxsleep"

	"sexton/api"
)

// InsertWait bounds how long PutIfAbsent and PutBatchIfAbsent wait for
// another put of a key to settle.
const InsertWait = 15 * time.Second

// PutIfAbsent is Mooncake's put: insert-if-absent that races well. It puts
// value with PutOptions.IfAbsent; when that is refused because the key
// exists or another put of it is in flight, or its outcome is unknown, it
// waits for the key to hold a value (asking Exist with a backoff of 2 ms
// doubling to 50 ms, at most InsertWait or until ctx is done) and reports
// success: stored is then false, the value there being the first one, this
// call's whose outcome was unknown or another's. A key that stays absent
// with no put in flight (the other put was revoked or discarded) is put
// again with this call's value. So a nil error always means that when the
// call returned the key held a complete value. After InsertWait with
// another put still in flight the error is that put's
// OBJECT_ALREADY_EXISTS, and nothing was stored.
//
// Put with PutOptions.IfAbsent is the raw answer: OBJECT_ALREADY_EXISTS
// both for a key that exists and for one with a put in flight.
func (c *Client) PutIfAbsent(ctx context.Context, key string, value []byte, opt PutOptions) (inc api.ObjectIncarnation, stored bool, err error) {
	return c.insert(ctx, key, valueParts{value}, opt)
}

func (c *Client) insert(ctx context.Context, key string, value valueParts, opt PutOptions) (api.ObjectIncarnation, bool, error) {
	opt.IfAbsent = true
	deadline := time.Now().Add(InsertWait)
	pause := 2 * time.Millisecond
	for {
		inc, err := c.put(ctx, key, value, opt)
		if err == nil {
			return inc, true, nil
		}
		if !insertRaced(err) {
			return api.ObjectIncarnation{}, false, err
		}
		if ex, xerr := c.Exist(ctx, []string{key}); xerr == nil && ex[0] {
			return api.ObjectIncarnation{}, false, nil
		}
		if time.Now().Add(pause).After(deadline) {
			return api.ObjectIncarnation{}, false, err
		}
		if !ctxsleep.Sleep(ctx, pause) {
			return api.ObjectIncarnation{}, false, ctx.Err()
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// insertRaced reports whether an insert-if-absent put's error may mean the
// key holds (or is about to hold) a value: it exists or is being put, or
// the put's own outcome is unknown.
func insertRaced(err error) bool {
	c := api.CodeOf(err)
	return c == api.CodeObjectAlreadyExists || c == api.CodeOutcomeUnknown
}

// PutBatchIfAbsent is PutIfAbsent of many objects: one PutBatch with
// IfAbsent set, then each item it refused because its key exists or is
// being put, or whose outcome is unknown, settled as PutIfAbsent settles
// it (a key that exists by then is a success, concurrently). A result
// with a nil Err and a zero Incarnation is a key that already held a
// value; a non-zero Incarnation is this call's. Keys may repeat: a
// repeated key is put by its first item and the later ones find it there.
// The error is PutBatch's (a whole request failed); its items have it as
// their outcome, unless settled.
func (c *Client) PutBatchIfAbsent(ctx context.Context, items []PutItem) ([]PutResult, error) {
	first := make(map[string]bool, len(items))
	var batch []PutItem
	var idx, later []int
	for i, it := range items {
		it.IfAbsent = true
		if first[it.Key] {
			later = append(later, i)
			continue
		}
		first[it.Key] = true
		batch = append(batch, it)
		idx = append(idx, i)
	}
	out := make([]PutResult, len(items))
	res, err := c.PutBatch(ctx, batch)
	if res == nil {
		return nil, err
	}
	var settle []int
	for j, i := range idx {
		out[i] = res[j]
		if res[j].Err != nil && insertRaced(res[j].Err) {
			settle = append(settle, i)
		}
	}
	settle = append(settle, later...)
	if len(settle) > 0 {
		// Most of them exist by now: one Exist settles those.
		keys := make([]string, len(settle))
		for j, i := range settle {
			keys[j] = items[i].Key
		}
		if ex, xerr := c.Exist(ctx, keys); xerr == nil {
			var left []int
			for j, i := range settle {
				if ex[j] {
					out[i] = PutResult{Key: items[i].Key}
				} else {
					left = append(left, i)
				}
			}
			settle = left
		}
	}
	parallel(len(settle), func(j int) {
		i := settle[j]
		inc, _, e := c.insert(ctx, items[i].Key, valueParts{items[i].Value}, items[i].PutOptions)
		out[i] = PutResult{Key: items[i].Key, Incarnation: inc, Err: e}
	})
	return out, err
}
