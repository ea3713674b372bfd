package client

import (
	"context"
	"fmt"
	"sync"

	"sexton/api"
)

// batchParallel bounds the holder calls one batch has in flight. The
// transport multiplexes calls on one connection per holder, so these are
// pipelined frames, not connections; the bound keeps a batch of large
// values from queueing all of its bytes at once.
const batchParallel = 32

// PutItem is one object of a PutBatch: its key, value and options.
type PutItem struct {
	Key   string
	Value []byte
	PutOptions
}

// PutResult is one item's outcome in a PutBatch: the new incarnation, or
// the error that item failed with.
type PutResult struct {
	Key         string
	Incarnation api.ObjectIncarnation
	Err         error
}

// GetResult is one key's outcome in a GetBatch: the value and the object's
// metadata, or the error that key failed with (api.ErrObjectNotFound for a
// key without a value).
type GetResult struct {
	Key   string
	Value []byte
	Info  api.ObjectInfo
	Err   error
}

// PutBatch stores many objects: one BatchPutStart (one Raft entry) for up
// to api.MaxBatchPutItems items, their holder writes issued concurrently,
// and one BatchPutEnd for the items whose writes all succeeded. Keys must
// be distinct.
//
// Each item has its own outcome. An item whose write a holder failed is
// revoked, as Put revokes, and, when the failure is worth placing
// elsewhere, put again on its own with Put. The error is non-nil when a
// whole request failed (the masters could not be reached, or a request
// was refused): the items it carried have that error as their outcome,
// and the items of earlier requests stand.
func (c *Client) PutBatch(ctx context.Context, items []PutItem) ([]PutResult, error) {
	out := make([]PutResult, len(items))
	seen := make(map[string]int, len(items))
	for i, it := range items {
		if j, dup := seen[it.Key]; dup {
			return nil, api.Errorf(api.CodeInvalidParams, "PutBatch: key %q is both item %d and item %d; a batch puts each key once (put the later value separately)", it.Key, j, i)
		}
		seen[it.Key] = i
		out[i].Key = it.Key
	}
	var firstErr error
	for lo := 0; lo < len(items); lo += api.MaxBatchPutItems {
		hi := min(lo+api.MaxBatchPutItems, len(items))
		if err := c.putChunk(ctx, items[lo:hi], out[lo:hi]); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return out, firstErr
}

// putChunk is PutBatch for at most api.MaxBatchPutItems items.
func (c *Client) putChunk(ctx context.Context, items []PutItem, out []PutResult) error {
	reqs := make([]api.PutStartRequest, len(items))
	for i, it := range items {
		reqs[i] = it.startRequest(it.Key, len(it.Value))
	}
	starts, err := c.BatchPutStart(ctx, reqs)
	if err != nil {
		err = fmt.Errorf("BatchPutStart of %d items: %w", len(items), err)
		for i := range out {
			out[i].Err = err
		}
		return err
	}
	failedSeg := make([]api.SegmentID, len(items))
	writeErr := make([]error, len(items))
	parallel(len(items), func(i int) {
		if starts[i].Err != nil {
			return
		}
		start := api.PutStartResponse{Incarnation: starts[i].Incarnation, Replicas: starts[i].Replicas}
		failedSeg[i], writeErr[i] = c.writeReplicas(ctx, items[i].Key, items[i].Tenant, start, valueParts{items[i].Value})
	})
	var ends []api.PutEndRequest
	var endOf []int
	var redo []int
	for i := range items {
		switch {
		case starts[i].Err != nil:
			out[i].Err = starts[i].Err
		case writeErr[i] != nil:
			c.revoke(ctx, items[i].Key, starts[i].Incarnation)
			if failedSeg[i] != "" && replaceable(writeErr[i]) && c.cfg.PutAttempts > 1 {
				redo = append(redo, i)
			} else {
				out[i].Err = writeErr[i]
			}
		default:
			ends = append(ends, api.PutEndRequest{Key: items[i].Key, Incarnation: starts[i].Incarnation})
			endOf = append(endOf, i)
		}
	}
	var endErr error
	if len(ends) > 0 {
		results, err := c.BatchPutEnd(ctx, ends)
		if err != nil {
			endErr = fmt.Errorf("BatchPutEnd of %d items: %w", len(ends), err)
		}
		for j, i := range endOf {
			switch {
			case err != nil:
				out[i].Err = endErr
			case results[j].Err != nil:
				// Refused: the put is still pending and would hold the key
				// until the master discards it.
				out[i].Err = fmt.Errorf("PutEnd %s: %w", ends[j].Incarnation, results[j].Err)
				c.revoke(ctx, items[i].Key, ends[j].Incarnation)
			default:
				out[i].Incarnation = ends[j].Incarnation
			}
		}
	}
	// An item a holder failed goes through Put, which places it away from
	// the holders that fail it; the batch's other items are done.
	parallel(len(redo), func(j int) {
		i := redo[j]
		inc, err := c.Put(ctx, items[i].Key, items[i].Value, items[i].PutOptions)
		if err != nil {
			out[i].Err = fmt.Errorf("%w (after the batch's write failed: %v)", err, writeErr[i])
			return
		}
		out[i].Incarnation = inc
	})
	return endErr
}

// GetBatch reads many keys: one BatchGet (up to api.MaxBatchKeys keys)
// names every key's replicas and leases them at once, then the holder
// reads are issued concurrently. Each key has its own outcome; a key whose
// replicas no longer hold the incarnation the master named is asked about
// again (with the others of its kind, in one BatchGet), as Get does. The
// error is non-nil when a BatchGet itself failed: its keys have that error
// as their outcome.
func (c *Client) GetBatch(ctx context.Context, keys []string) ([]GetResult, error) {
	return c.getBatch(ctx, keys, nil)
}

// GetBatchInto is GetBatch reading key i's value into bufs[i]: a result's
// Value is bufs[i][:size], and a value larger than its buffer fails that
// key with INVALID_PARAMS (its Info says the size needed). See GetInto for
// what is copied.
func (c *Client) GetBatchInto(ctx context.Context, keys []string, bufs [][]byte) ([]GetResult, error) {
	if len(bufs) != len(keys) {
		return nil, api.Errorf(api.CodeInvalidParams, "GetBatchInto: %d buffers for %d keys; give one buffer per key", len(bufs), len(keys))
	}
	return c.getBatch(ctx, keys, bufs)
}

// GetInto reads the key's newest value into buf and returns its length.
// The holder's answer is decoded straight into buf, so no value-sized
// allocation is made: the one copy left is from the frame the transport
// received into buf. A value larger than buf fails with INVALID_PARAMS,
// reading nothing; the returned info then has the size needed.
func (c *Client) GetInto(ctx context.Context, key string, buf []byte) (int, api.ObjectInfo, error) {
	if buf == nil {
		buf = []byte{}
	}
	res, err := c.getBatch(ctx, []string{key}, [][]byte{buf})
	if err != nil {
		return 0, api.ObjectInfo{}, err
	}
	r := res[0]
	return len(r.Value), r.Info, r.Err
}

func (c *Client) getBatch(ctx context.Context, keys []string, bufs [][]byte) ([]GetResult, error) {
	out := make([]GetResult, len(keys))
	for i, k := range keys {
		out[i].Key = k
	}
	var firstErr error
	for lo := 0; lo < len(keys); lo += api.MaxBatchKeys {
		hi := min(lo+api.MaxBatchKeys, len(keys))
		var chunkBufs [][]byte
		if bufs != nil {
			chunkBufs = bufs[lo:hi]
		}
		if err := c.getChunk(ctx, keys[lo:hi], chunkBufs, out[lo:hi]); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return out, firstErr
}

// getChunk is getBatch for at most api.MaxBatchKeys keys.
func (c *Client) getChunk(ctx context.Context, keys []string, bufs [][]byte, out []GetResult) error {
	todo := make([]int, len(keys))
	for i := range todo {
		todo[i] = i
	}
	lastErr := make([]error, len(keys))
	for attempt := 0; attempt < c.cfg.ReadAttempts && len(todo) > 0; attempt++ {
		ask := make([]string, len(todo))
		for j, i := range todo {
			ask[j] = keys[i]
		}
		var resp api.BatchGetResponse
		err := c.Call(ctx, api.MethodBatchGet, &api.KeysRequest{Keys: ask}, &resp)
		if err == nil && len(resp.Results) != len(ask) {
			err = api.Errorf(api.CodeInternal, "BatchGet answered %d results for %d keys", len(resp.Results), len(ask))
		}
		if err != nil {
			err = fmt.Errorf("BatchGet of %d keys: %w", len(ask), err)
			for _, i := range todo {
				out[i].Err = err
			}
			return err
		}
		gone := make([]bool, len(todo))
		parallel(len(todo), func(j int) {
			i, r := todo[j], resp.Results[j]
			switch {
			case r.Err != nil:
				out[i].Err = r.Err
				return
			case r.Object == nil:
				out[i].Err = api.Errorf(api.CodeInternal, "BatchGet answered neither an object nor an error for %q", keys[i])
				return
			}
			out[i].Info = *r.Object
			var buf []byte
			if bufs != nil {
				buf = bufs[i]
				if r.Object.Size > int64(len(buf)) {
					out[i].Err = api.Errorf(api.CodeInvalidParams, "%s (%s) is %d bytes, its buffer %d: give a buffer of at least the object's size",
						keys[i], r.Object.Incarnation, r.Object.Size, len(buf))
					return
				}
			}
			v, g, err := c.readReplicasInto(ctx, *r.Object, buf, nil)
			out[i].Value, out[i].Err, gone[j] = v, err, g && err != nil
			lastErr[i] = err
		})
		var again []int
		for j, i := range todo {
			if gone[j] {
				again = append(again, i)
			}
		}
		todo = again
	}
	for _, i := range todo {
		out[i].Value, out[i].Info = nil, api.ObjectInfo{}
		out[i].Err = api.Errorf(api.CodeUnavailable, "get %s: the replicas kept losing the incarnation the master named (%d attempts): %v", keys[i], c.cfg.ReadAttempts, lastErr[i])
	}
	return nil
}

// parallel runs f(0..n-1) on at most batchParallel goroutines and waits.
func parallel(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(n, batchParallel); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
