package main

import (
	"fmt"

	"sexton/api"
	"sexton/client"
)

// benchBatchAlloc is the batch phase of bench dfs: n DFS allocations in
// batches of size (one BatchPutStart and one BatchPutEnd, two Raft
// entries, per batch), from clients concurrent clients. The rate counts
// objects. It returns the keys it created.
func benchBatchAlloc(e *env, cl *client.Client, prefix string, n, size, clients int) ([]string, error) {
	if size < 1 || size > api.MaxBatchPutItems {
		return nil, usagef("--batch %d outside 1..%d", size, api.MaxBatchPutItems)
	}
	batches := (n + size - 1) / size
	key := func(b, j int) string { return fmt.Sprintf("%sbatch%d/%08d", prefix, size, b*size+j) }
	_, err := runParallel(fmt.Sprintf("dfs allocate+commit, batches of %d, %d client(s)", size, clients), batches, clients, size, func(b int) error {
		ctx, c := e.ctx()
		defer c()
		req := &api.BatchPutStartRequest{Items: make([]api.PutStartRequest, size)}
		for j := range req.Items {
			req.Items[j] = api.PutStartRequest{Key: key(b, j), Size: 4096, DFSReplicaNum: 1}
		}
		var st api.BatchPutStartResponse
		if err := cl.Call(ctx, api.MethodBatchPutStart, req, &st); err != nil {
			return err
		}
		end := &api.BatchPutEndRequest{}
		var firstErr error
		for j, r := range st.Results {
			if r.Err != nil {
				if firstErr == nil {
					firstErr = r.Err
				}
				continue
			}
			end.Items = append(end.Items, api.PutEndRequest{Key: key(b, j), Incarnation: r.Incarnation})
		}
		if len(end.Items) > 0 {
			var er api.BatchPutEndResponse
			if err := cl.Call(ctx, api.MethodBatchPutEnd, end, &er); err != nil {
				return err
			}
			for _, r := range er.Results {
				if r.Err != nil && firstErr == nil {
					firstErr = r.Err
				}
			}
		}
		return firstErr
	})
	keys := make([]string, 0, batches*size)
	for b := 0; b < batches; b++ {
		for j := 0; j < size; j++ {
			keys = append(keys, key(b, j))
		}
	}
	return keys, err
}
