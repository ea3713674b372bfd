package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sexton/api"
)

// Three masters: one BatchPutStart of 64 DFS objects (one Raft entry), the
// bytes written at the descriptors, one BatchPutEnd; every object reads
// back with its own bytes, before and after the leader is killed, all 64
// share the batch entry's incarnation, and no two ranges overlap. A batch
// naming a key twice is refused whole.
func TestDFSBatchPut64ThroughThreeMasters(t *testing.T) {
	root, env, c := startDFSCluster(t, 3)
	cl := c.client(0)
	ctx, cancel := ctxT(3 * time.Minute)
	defer cancel()

	const n = 64
	keys := make([]string, n)
	req := &api.BatchPutStartRequest{}
	for i := range keys {
		keys[i] = fmt.Sprintf("batch/%02d", i)
		req.Items = append(req.Items, api.PutStartRequest{Key: keys[i], Size: int64(len(value(keys[i], 3000+i))), DFSReplicaNum: 1})
	}
	dup := &api.BatchPutStartRequest{Items: []api.PutStartRequest{req.Items[0], req.Items[1], req.Items[0]}}
	if err := cl.Call(ctx, api.MethodBatchPutStart, dup, &api.BatchPutStartResponse{}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("duplicate-key batch: %v, want INVALID_PARAMS", err)
	}
	var st api.BatchPutStartResponse
	if err := cl.Call(ctx, api.MethodBatchPutStart, req, &st); err != nil {
		t.Fatalf("batch put start: %v", err)
	}
	if len(st.Results) != n {
		t.Fatalf("%d results for %d items", len(st.Results), n)
	}
	inc := st.Results[0].Incarnation
	end := &api.BatchPutEndRequest{}
	descs := map[string]api.DFSDescriptor{}
	for i, r := range st.Results {
		if r.Err != nil || r.Incarnation != inc || inc.IsZero() {
			t.Fatalf("item %d: %+v (first incarnation %s)", i, r, inc)
		}
		var d *api.DFSDescriptor
		for _, rep := range r.Replicas {
			if rep.Kind == api.ReplicaDFS {
				d = rep.DFS
			}
		}
		if d == nil {
			t.Fatalf("item %d has no DFS descriptor: %+v", i, r.Replicas)
		}
		descs[keys[i]] = *d
		f, err := os.OpenFile(filepath.Join(root, d.Path), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(value(keys[i], 3000+i), d.Offset); err != nil {
			t.Fatal(err)
		}
		f.Close()
		end.Items = append(end.Items, api.PutEndRequest{Key: keys[i], Incarnation: r.Incarnation})
	}
	requireNoOverlap(t, descs)
	var er api.BatchPutEndResponse
	if err := cl.Call(ctx, api.MethodBatchPutEnd, end, &er); err != nil {
		t.Fatalf("batch put end: %v", err)
	}
	for i, r := range er.Results {
		if r.Err != nil || r.Key != keys[i] {
			t.Fatalf("end item %d: %+v", i, r)
		}
	}
	check := func(when string) {
		var g api.BatchGetResponse
		if err := cl.Call(ctx, api.MethodBatchGet, &api.KeysRequest{Keys: keys}, &g); err != nil {
			t.Fatalf("%s: batch get: %v", when, err)
		}
		for i, r := range g.Results {
			if r.Err != nil || r.Object.Incarnation != inc {
				t.Fatalf("%s: get %s: %+v", when, keys[i], r)
			}
		}
		for _, i := range []int{0, n / 2, n - 1} {
			if got := dfsGet(t, c, env, keys[i]); !bytes.Equal(got, value(keys[i], 3000+i)) {
				t.Fatalf("%s: %s reads %d bytes, not its value", when, keys[i], len(got))
			}
		}
	}
	check("after the batch")
	old := c.leader()
	old.kill()
	c.waitLeader(30 * time.Second)
	check("after failover")
	old.start()
	c.waitLeader(30 * time.Second)
}
