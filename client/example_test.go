package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/devcluster"
)

// masters is the address of the one-process cluster the examples run
// against (started by TestMain).
var masters []string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sexton-client-example-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c, err := devcluster.Start(devcluster.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dev cluster:", err)
		os.Exit(1)
	}
	masters = []string{c.MasterAddr()}
	code := m.Run()
	c.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func Example() {
	cl, err := client.New(client.Config{Masters: masters})
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := cl.Put(ctx, "example/hello", []byte("world"), client.PutOptions{}); err != nil {
		panic(err)
	}
	v, _, err := cl.Get(ctx, "example/hello")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(v))
	if err := cl.Remove(ctx, "example/hello"); err != nil {
		panic(err)
	}
	_, _, err = cl.Get(ctx, "example/hello")
	fmt.Println(errors.Is(err, api.ErrObjectNotFound))
	// Output:
	// world
	// true
}

func ExampleClient_Put() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	first, _ := cl.Put(ctx, "example/put", []byte("v1"), client.PutOptions{})
	second, _ := cl.Put(ctx, "example/put", []byte("v2"), client.PutOptions{})
	// Every put is a new incarnation of the key; the newest is read.
	fmt.Println(first.Less(second))
	_, err := cl.Put(ctx, "example/put", []byte("v3"), client.PutOptions{IfAbsent: true})
	fmt.Println(api.CodeOf(err))
	// Output:
	// true
	// OBJECT_ALREADY_EXISTS
}

func ExampleClient_Get() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	_, _ = cl.Put(ctx, "example/get", []byte("value"), client.PutOptions{})
	v, info, err := cl.Get(ctx, "example/get")
	fmt.Println(string(v), info.Size, len(info.Replicas), err)
	// Output:
	// value 5 1 <nil>
}

func ExampleClient_Stat() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	inc, _ := cl.Put(ctx, "example/stat", []byte("abc"), client.PutOptions{})
	st, err := cl.Stat(ctx, "example/stat")
	fmt.Println(st.Object.Incarnation == inc, st.Object.Size, st.PendingPut == nil, err)
	// Output:
	// true 3 true <nil>
}

func ExampleClient_Remove() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	old, _ := cl.Put(ctx, "example/rm", []byte("old"), client.PutOptions{})
	_, _ = cl.Put(ctx, "example/rm", []byte("new"), client.PutOptions{})
	// A conditional remove of the overwritten value leaves the new one.
	err := cl.Remove(ctx, "example/rm", client.IfIncarnation(old))
	fmt.Println(api.CodeOf(err))
	fmt.Println(cl.Remove(ctx, "example/rm"))
	fmt.Println(api.CodeOf(cl.Remove(ctx, "example/rm")))
	// Output:
	// INCARNATION_MISMATCH
	// <nil>
	// OBJECT_NOT_FOUND
}

func ExampleClient_BatchRemove() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	_, _ = cl.Put(ctx, "example/batch/a", []byte("a"), client.PutOptions{})
	_, _ = cl.Put(ctx, "example/batch/b", []byte("b"), client.PutOptions{})
	results, err := cl.BatchRemove(ctx, []string{"example/batch/a", "example/batch/missing", "example/batch/b"}, nil)
	for _, r := range results {
		if r.Err != nil {
			fmt.Println(r.Key, r.Err.Code)
		} else {
			fmt.Println(r.Key, "removed")
		}
	}
	fmt.Println(err)
	// Output:
	// example/batch/a removed
	// example/batch/missing OBJECT_NOT_FOUND
	// example/batch/b removed
	// <nil>
}

func ExampleClient_RemoveItems() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	old, _ := cl.Put(ctx, "example/items/a", []byte("old"), client.PutOptions{})
	_, _ = cl.Put(ctx, "example/items/a", []byte("new"), client.PutOptions{})
	_, _ = cl.Put(ctx, "example/items/b", []byte("b"), client.PutOptions{})
	// Each key with its own condition: a's overwritten value is not its
	// current one, so a stays; b has no condition.
	results, err := cl.RemoveItems(ctx, []api.RemoveItem{{Key: "example/items/a", IfInc: old}, {Key: "example/items/b"}})
	for _, r := range results {
		if r.Err != nil {
			fmt.Println(r.Key, r.Err.Code)
		} else {
			fmt.Println(r.Key, "removed")
		}
	}
	fmt.Println(err)
	// Output:
	// example/items/a INCARNATION_MISMATCH
	// example/items/b removed
	// <nil>
}

func ExampleClient_List() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	for _, k := range []string{"example/list/1", "example/list/2", "example/list/3"} {
		if _, err := cl.Put(ctx, k, []byte(k), client.PutOptions{}); err != nil {
			fmt.Println(k, err)
		}
	}
	objs, next, _ := cl.List(ctx, "example/list/", "", 2)
	for _, o := range objs {
		fmt.Println(o.Key)
	}
	objs, next, _ = cl.List(ctx, "example/list/", next, 2)
	fmt.Println(objs[0].Key, next == "")
	// Output:
	// example/list/1
	// example/list/2
	// example/list/3 true
}

func ExampleClient_Settings() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	s, _ := cl.SetSettings(ctx, api.Settings{RegistryCapacity: 60000})
	fmt.Println(s.Settings.RegistryCapacity)
	s, _ = cl.Settings(ctx)
	fmt.Println(s.Settings.RegistryCapacity)
	// Output:
	// 60000
	// 60000
}

func ExampleClient_WaitDeleted() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	ctx := context.Background()
	inc, _ := cl.Put(ctx, "example/wait", []byte("bytes"), client.PutOptions{})
	_ = cl.Remove(ctx, "example/wait")
	// Remove returned once the delete was committed; the holder's durable
	// tombstone follows. WaitDeleted waits for it.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fmt.Println(cl.WaitDeleted(wctx, "example/wait", inc))
	tasks, _ := cl.PendingDeletes(ctx, "example/wait")
	fmt.Println(len(tasks))
	// Output:
	// <nil>
	// 0
}

func ExampleClient_DFSStatus() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	// The example cluster has no DFS root configured.
	st, err := cl.DFSStatus(context.Background())
	fmt.Println(st.Enabled, err)
	cfg, err := cl.DFSConfig(context.Background())
	fmt.Println(cfg.Enabled, err)
	// Output:
	// false <nil>
	// false <nil>
}

func ExampleClient_Status() {
	cl, _ := client.New(client.Config{Masters: masters})
	defer cl.Close()
	st, err := cl.Status(context.Background())
	fmt.Println(st.RaftState, st.ClusterID != 0, err)
	// Output:
	// Leader true <nil>
}

// The data path of a KV cache (Mooncake's batch_put_from and
// batch_get_into): blocks are slices of one region, put from it without a
// copy, placed on the holder of this host when it has room, and read back
// into another region with one BatchGet and pipelined holder reads.
func ExampleClient_PutBatch() {
	host, _ := os.Hostname()
	cl, err := client.New(client.Config{Masters: masters, ReadPrefer: []string{host, "127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx := context.Background()
	const blocks, size = 4, 4096
	src, dst := make([]byte, blocks*size), make([]byte, blocks*size)
	for i := range src {
		src[i] = byte(i / size)
	}
	items := make([]client.PutItem, blocks)
	keys := make([]string, blocks)
	bufs := make([][]byte, blocks)
	for i := range items {
		keys[i] = fmt.Sprintf("example/kv/block-%d", i)
		bufs[i] = dst[i*size : (i+1)*size]
		items[i] = client.PutItem{Key: keys[i], Value: src[i*size : (i+1)*size],
			PutOptions: client.PutOptions{IfAbsent: true, Prefer: []string{host, "127.0.0.1"}}}
	}
	if _, err := cl.PutBatch(ctx, items); err != nil {
		panic(err)
	}
	got, err := cl.GetBatchInto(ctx, keys, bufs)
	if err != nil {
		panic(err)
	}
	for _, g := range got {
		if g.Err != nil {
			panic(g.Err)
		}
	}
	fmt.Println(bytes.Equal(src, dst))
	again, _ := cl.PutBatch(ctx, items[:1])
	fmt.Println(api.CodeOf(again[0].Err))
	exist, _ := cl.Exist(ctx, []string{keys[0], "example/kv/never-put"})
	fmt.Println(exist)
	// Output:
	// true
	// OBJECT_ALREADY_EXISTS
	// [true false]
}
