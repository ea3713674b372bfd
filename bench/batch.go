package bench

import (
	"context"
	"fmt"

	"sexton/api"
	"sexton/client"
)

// putBatch starts and completes items with one BatchPutStart and one
// BatchPutEnd (two Raft entries), both sessioned, so the client's retries
// through a leader change act once. It writes no bytes: the benches place
// on simulated holders, or allocate DFS space they never read. It returns
// the indexes of the items committed, in order, and the first error of
// an item that was not; err is a call that failed, after which the
// items' fates are unknown.
func putBatch(ctx context.Context, cl *client.Client, items []api.PutStartRequest) (committed []int, itemErr, err error) {
	started, err := cl.BatchPutStart(ctx, items)
	if err != nil {
		return nil, nil, fmt.Errorf("BatchPutStart: %w", err)
	}
	end := make([]api.PutEndRequest, 0, len(items))
	at := make([]int, 0, len(items)) // end[j] is items[at[j]]
	for i, r := range started {
		if r.Err != nil {
			itemErr = keepFirst(itemErr, fmt.Errorf("put start %s: %w", items[i].Key, r.Err))
			continue
		}
		end = append(end, api.PutEndRequest{Key: items[i].Key, Incarnation: r.Incarnation})
		at = append(at, i)
	}
	if len(end) == 0 {
		return nil, itemErr, nil
	}
	ended, err := cl.BatchPutEnd(ctx, end)
	if err != nil {
		return nil, itemErr, fmt.Errorf("BatchPutEnd: %w", err)
	}
	committed = at[:0]
	for j, r := range ended {
		if r.Err != nil {
			itemErr = keepFirst(itemErr, fmt.Errorf("put end %s: %w", end[j].Key, r.Err))
			continue
		}
		committed = append(committed, at[j])
	}
	return committed, itemErr, nil
}

// keepFirst keeps the first error.
func keepFirst(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// benchBatchAlloc is the batch phase of bench dfs: n DFS allocations in
// batches of size (one BatchPutStart and one BatchPutEnd, two Raft
// entries, per batch), from clients concurrent clients. The rate counts
// objects. It returns the keys it created.
func benchBatchAlloc(e *Env, cl *client.Client, prefix string, n, size, clients int) ([]string, error) {
	if size < 1 || size > api.MaxBatchPutItems {
		return nil, usagef("--batch %d outside 1..%d", size, api.MaxBatchPutItems)
	}
	batches := (n + size - 1) / size
	key := func(b, j int) string { return fmt.Sprintf("%sbatch%d/%08d", prefix, size, b*size+j) }
	_, err := e.runParallel(fmt.Sprintf("dfs allocate+commit, batches of %d, %d client(s)", size, clients), batches, clients, size, func(b int) error {
		ctx, c := e.ctx()
		defer c()
		items := make([]api.PutStartRequest, size)
		for j := range items {
			items[j] = api.PutStartRequest{Key: key(b, j), Size: 4096, DFSReplicaNum: 1}
		}
		_, itemErr, err := putBatch(ctx, cl, items)
		return keepFirst(err, itemErr)
	})
	keys := make([]string, 0, batches*size)
	for b := 0; b < batches; b++ {
		for j := 0; j < size; j++ {
			keys = append(keys, key(b, j))
		}
	}
	return keys, err
}
