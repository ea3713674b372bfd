package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
	"sexton/devcluster"
	"sexton/holder"
)

func newTestClient(t testing.TB, addrs []string) *client.Client {
	t.Helper()
	cl, err := client.New(client.Config{Masters: addrs, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func value(i, size int) []byte {
	v := bytes.Repeat([]byte{byte(i)}, size)
	copy(v, fmt.Sprintf("value %d", i))
	return v
}

// numberedItems is n put items under prefix, item i keyed prefix%03d
// with value(i, size).
func numberedItems(prefix string, n, size int) []client.PutItem {
	items := make([]client.PutItem, n)
	for i := range items {
		items[i] = client.PutItem{Key: fmt.Sprintf("%s%03d", prefix, i), Value: value(i, size)}
	}
	return items
}

// Every key of a batch has its own outcome: the values put, a key never
// put (OBJECT_NOT_FOUND), all from one BatchGet; the buffer form reads
// into the caller's buffers, and refuses a buffer too small for its key
// only.
func TestBatchPerKeyOutcomes(t *testing.T) {
	cl := newTestClient(t, masters)
	ctx := context.Background()
	prefix := fmt.Sprintf("batch/outcomes/%d/", time.Now().UnixNano())
	var items []client.PutItem
	for i := range 40 {
		items = append(items, client.PutItem{Key: fmt.Sprintf("%s%03d", prefix, i), Value: value(i, 1000+i)})
	}
	res, err := cl.PutBatch(ctx, items)
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	for i, r := range res {
		if r.Err != nil || r.Key != items[i].Key || r.Incarnation.IsZero() {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	keys := []string{items[0].Key, prefix + "missing", items[39].Key, items[7].Key}
	got, err := cl.GetBatch(ctx, keys)
	if err != nil {
		t.Fatalf("GetBatch: %v", err)
	}
	for j, want := range []int{0, -1, 39, 7} {
		g := got[j]
		if want < 0 {
			if !errors.Is(g.Err, api.ErrObjectNotFound) || g.Value != nil {
				t.Fatalf("missing key: %+v, want OBJECT_NOT_FOUND", g)
			}
			continue
		}
		if g.Err != nil || !bytes.Equal(g.Value, items[want].Value) || g.Info.Incarnation != res[want].Incarnation {
			t.Fatalf("key %d: err %v, %d bytes, inc %s; want item %d (%d bytes, %s)", j, g.Err, len(g.Value), g.Info.Incarnation, want, len(items[want].Value), res[want].Incarnation)
		}
	}

	bufs := [][]byte{make([]byte, 4096), make([]byte, 10), make([]byte, 2000)}
	into, err := cl.GetBatchInto(ctx, []string{items[1].Key, items[2].Key, prefix + "missing"}, bufs)
	if err != nil {
		t.Fatalf("GetBatchInto: %v", err)
	}
	if into[0].Err != nil || !bytes.Equal(into[0].Value, items[1].Value) || &into[0].Value[0] != &bufs[0][0] {
		t.Fatalf("GetBatchInto key 0: err %v, in the caller's buffer %v", into[0].Err, into[0].Err == nil && &into[0].Value[0] == &bufs[0][0])
	}
	if api.CodeOf(into[1].Err) != api.CodeInvalidParams || into[1].Info.Size != int64(len(items[2].Value)) {
		t.Fatalf("a 10-byte buffer for a %d-byte value: %+v, want INVALID_PARAMS naming the size", len(items[2].Value), into[1])
	}
	if !errors.Is(into[2].Err, api.ErrObjectNotFound) {
		t.Fatalf("missing key into a buffer: %v", into[2].Err)
	}

	buf := make([]byte, 1<<16)
	n, info, err := cl.GetInto(ctx, items[5].Key, buf)
	if err != nil || !bytes.Equal(buf[:n], items[5].Value) || info.Incarnation != res[5].Incarnation {
		t.Fatalf("GetInto: %d bytes, %v", n, err)
	}

	if _, err := cl.PutBatch(ctx, []client.PutItem{{Key: prefix + "dup"}, {Key: prefix + "dup"}}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("a key twice in one batch: %v, want INVALID_PARAMS", err)
	}
	// if_absent refuses the existing keys only.
	mixed, err := cl.PutBatch(ctx, []client.PutItem{
		{Key: items[3].Key, Value: []byte("x"), PutOptions: client.PutOptions{IfAbsent: true}},
		{Key: prefix + "new", Value: []byte("y"), PutOptions: client.PutOptions{IfAbsent: true}},
	})
	if err != nil || api.CodeOf(mixed[0].Err) != api.CodeObjectAlreadyExists || mixed[1].Err != nil {
		t.Fatalf("if_absent batch: %v, %+v", err, mixed)
	}
}

// A batch whose keys lie on two holders, one of which is down: the keys
// on the live one are read, the others fail with UNAVAILABLE naming the
// replica, and a put batch places the writes the dead holder failed on the
// live one.
func TestBatchOneHolderDown(t *testing.T) {
	cl, second := twoHolders(t)
	ctx := context.Background()

	items := numberedItems("down/", 32, 512)
	res, err := cl.PutBatch(ctx, items)
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	deadEndpoint := second.svc.Addr()
	second.close()

	keys := make([]string, len(items))
	for i := range items {
		keys[i] = items[i].Key
	}
	got, err := cl.GetBatch(ctx, keys)
	if err != nil {
		t.Fatalf("GetBatch: %v", err)
	}
	var onDead, onLive int
	for i, g := range got {
		if len(g.Info.Replicas) != 1 {
			t.Fatalf("key %d: %d replicas", i, len(g.Info.Replicas))
		}
		if g.Info.Replicas[0].Segment == second.seg {
			onDead++
			if api.CodeOf(g.Err) != api.CodeUnavailable || g.Value != nil {
				t.Fatalf("key %d on the stopped holder %s: %v, want UNAVAILABLE", i, deadEndpoint, g.Err)
			}
			continue
		}
		onLive++
		if g.Err != nil || !bytes.Equal(g.Value, items[i].Value) {
			t.Fatalf("key %d on the live holder: %v", i, g.Err)
		}
	}
	if onDead == 0 || onLive == 0 {
		t.Fatalf("placement put %d keys on the stopped holder and %d on the live one; the test needs both", onDead, onLive)
	}

	// The master still counts the stopped holder's segment as mounted:
	// some writes go there, fail, and are placed again.
	again := numberedItems("down/again/", 32, 512)
	res, err = cl.PutBatch(ctx, again)
	if err != nil {
		t.Fatalf("PutBatch with a holder down: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d with a holder down: %v", i, r.Err)
		}
		v, info, err := cl.Get(ctx, again[i].Key)
		if err != nil || !bytes.Equal(v, again[i].Value) || info.Replicas[0].Segment == second.seg {
			t.Fatalf("item %d after the batch: %v", i, err)
		}
	}
}

// A BatchPutStart or BatchPutEnd whose answer is lost (the connection
// drops after the leader ran it) is retried with the same session, and the
// leader answers the first result: every key is put once, none is left
// pending, none refused as a put already in progress or not pending.
func TestPutBatchExactlyOnceWhenTheAnswerIsLost(t *testing.T) {
	for _, method := range []string{api.MethodBatchPutStart, api.MethodBatchPutEnd} {
		t.Run(method, func(t *testing.T) {
			px := startDropProxy(t, masters[0], method)
			cl := newTestClient(t, []string{px.addr})
			ctx := context.Background()
			prefix := fmt.Sprintf("batch/once/%s/%d/", method, time.Now().UnixNano())
			items := numberedItems(prefix, 16, 100)
			res, err := cl.PutBatch(ctx, items)
			if err != nil {
				t.Fatalf("PutBatch: %v", err)
			}
			if px.dropped.Load() != 1 {
				t.Fatalf("the proxy dropped %d answers, want 1", px.dropped.Load())
			}
			for i, r := range res {
				if r.Err != nil {
					t.Fatalf("item %d: %v", i, r.Err)
				}
				var st api.StatResponse
				if err := cl.Call(ctx, api.MethodStat, &api.KeyRequest{Key: items[i].Key}, &st); err != nil {
					t.Fatal(err)
				}
				if st.Object.Incarnation != r.Incarnation || st.PendingPut != nil {
					t.Fatalf("item %d: the key's incarnation %s, pending %v; the batch answered %s", i, st.Object.Incarnation, st.PendingPut, r.Incarnation)
				}
			}
		})
	}
}

// BenchmarkGet compares 32 single gets with one GetBatch and one
// GetBatchInto of the same 32 keys (64 KiB values).
func BenchmarkGet(b *testing.B) {
	cl := newTestClient(b, masters)
	ctx := context.Background()
	prefix := fmt.Sprintf("batch/bench/%d/", time.Now().UnixNano())
	var items []client.PutItem
	keys := make([]string, 32)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%02d", prefix, i)
		items = append(items, client.PutItem{Key: keys[i], Value: value(i, 64<<10)})
	}
	if _, err := cl.PutBatch(ctx, items); err != nil {
		b.Fatal(err)
	}
	b.Run("single", func(b *testing.B) {
		b.SetBytes(32 << 16)
		for b.Loop() {
			for _, k := range keys {
				if _, _, err := cl.Get(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		b.SetBytes(32 << 16)
		for b.Loop() {
			if _, err := cl.GetBatch(ctx, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
	bufs := make([][]byte, len(keys))
	for i := range bufs {
		bufs[i] = make([]byte, 64<<10)
	}
	b.Run("batch-into", func(b *testing.B) {
		b.SetBytes(32 << 16)
		for b.Loop() {
			if _, err := cl.GetBatchInto(ctx, keys, bufs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPut compares 32 single puts with one PutBatch of 32 (4 KiB).
func BenchmarkPut(b *testing.B) {
	cl := newTestClient(b, masters)
	ctx := context.Background()
	v := value(1, 4096)
	n := 0
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			for range 32 {
				n++
				if _, err := cl.Put(ctx, fmt.Sprintf("batch/benchput/%d", n), v, client.PutOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			items := make([]client.PutItem, 32)
			for i := range items {
				n++
				items[i] = client.PutItem{Key: fmt.Sprintf("batch/benchput/%d", n), Value: v}
			}
			if _, err := cl.PutBatch(ctx, items); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type testHolder struct {
	store *holder.Store
	svc   *holder.Service
	seg   api.SegmentID
	once  sync.Once
}

func (h *testHolder) close() {
	h.once.Do(func() {
		h.svc.Close()
		h.store.Close()
	})
}

// twoHolders starts a dev cluster with a second holder, both mounted, and
// a client of it; the cluster stops when the test ends.
func twoHolders(t *testing.T) (*client.Client, *testHolder) {
	t.Helper()
	dir := t.TempDir()
	dc, err := devcluster.Start(devcluster.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	second := startHolder(t, filepath.Join(dir, "holder2"), dc.MasterAddr())
	cl := newTestClient(t, []string{dc.MasterAddr()})
	waitSegments(t, cl, 2)
	return cl, second
}

// startHolder starts a second holder of the cluster at master.
func startHolder(t *testing.T, dir, master string) *testHolder {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts, err := holder.OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	store, err := holder.OpenStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := holder.StartService(store, holder.ServiceConfig{Masters: []string{master}, ListenAddr: "127.0.0.1:0", ClientID: "second-holder"})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	h := &testHolder{store: store, svc: svc, seg: store.SegmentID()}
	t.Cleanup(h.close)
	return h
}

// waitSegments waits until n segments are mounted.
func waitSegments(t *testing.T, cl *client.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ls api.ListSegmentsResponse
		err := cl.Call(context.Background(), api.MethodListSegments, &api.Empty{}, &ls)
		mounted := 0
		for _, s := range ls.Segments {
			if s.Mounted {
				mounted++
			}
		}
		if err == nil && mounted >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d segments mounted (%v)", mounted, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dropProxy forwards TCP to a master; the first request frame that
// contains method is forwarded, its connection's answers are swallowed,
// and the connection is closed once the master has had time to run it.
type dropProxy struct {
	addr    string
	armed   atomic.Bool
	dropped atomic.Int64
}

func startDropProxy(t *testing.T, target, method string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &dropProxy{addr: ln.Addr().String()}
	px.armed.Store(true)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go px.serve(c, target, []byte(method))
		}
	}()
	return px
}

func (px *dropProxy) serve(c net.Conn, target string, method []byte) {
	defer c.Close()
	m, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer m.Close()
	var swallow atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := m.Read(buf)
			if n > 0 && !swallow.Load() {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], method) && px.armed.CompareAndSwap(true, false) {
				swallow.Store(true)
				px.dropped.Add(1)
				_, _ = m.Write(buf[:n])
				time.Sleep(500 * time.Millisecond) // the leader runs it
				return
			}
			if _, werr := m.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
