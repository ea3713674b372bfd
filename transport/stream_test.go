package transport

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// streamSeen is what a streamed handler saw of one request.
type streamSeen struct {
	n       int
	tail    bool  // the request had a Tail
	inMem   bool  // its Bytes were set (the frame was read whole)
	size    int64 // its Len
	got     []byte
	readErr error
}

// startStreamServer serves "Blob" with HandleStream on field "blob": the
// handler reads the tail and reports what it saw; a request with a
// negative n is refused after reading only read bytes of it.
func startStreamServer(t *testing.T, read int, frameTimeout time.Duration) (*testServer, chan streamSeen) {
	seen := make(chan streamSeen, 16)
	ts := startServer(t, ServerConfig{MaxFrame: 64 << 20, FrameTimeout: frameTimeout}, func(s *Server) {
		s.HandleStream("Blob", "blob", func(_ context.Context, r *Request) (any, error) {
			var req tailDecoded
			if err := r.Decode(&req); err != nil {
				return nil, err
			}
			st := streamSeen{n: req.N}
			if tl := r.Tail(); tl != nil {
				st.tail, st.inMem, st.size = true, tl.Bytes() != nil, tl.Len()
				var src io.Reader = tl
				if req.N < 0 {
					src = io.LimitReader(tl, int64(read))
				}
				st.got, st.readErr = io.ReadAll(src)
			} else {
				st.got = req.Blob
			}
			seen <- st
			if req.N < 0 {
				return nil, api.Errorf(api.CodeGrantRefused, "refused %d", req.N)
			}
			return &echoResp{N: req.N}, nil
		})
	})
	return ts, seen
}

func blobOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// A large request whose body ends in the streamed field reaches the
// handler as the body without it plus a Tail that reads the field from
// the connection; a small one has its Tail in memory. Either way the
// handler reads exactly the bytes sent, and the connection serves the
// next call.
func TestStreamedFieldReachesTheHandler(t *testing.T) {
	ts, seen := startStreamServer(t, 0, 0)
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 64 << 20})
	for _, size := range []int{0, 1000, streamMinFrame + 1, 5<<20 + 3} {
		blob := blobOf(size, byte(size))
		var resp echoResp
		if err := c.Call(context.Background(), "Blob", &tailReq{N: size, Blob: blob}, &resp); err != nil || resp.N != size {
			t.Fatalf("%d bytes: %v %+v", size, err, resp)
		}
		st := <-seen
		if !st.tail || st.size != int64(size) || !bytes.Equal(st.got, blob) || st.readErr != nil || st.n != size {
			t.Fatalf("%d bytes: handler saw tail %v of %d bytes, read %d (%v), n %d", size, st.tail, st.size, len(st.got), st.readErr, st.n)
		}
		if streamed := size > streamMinFrame; st.inMem == streamed {
			t.Fatalf("%d bytes: in memory %v, want %v", size, st.inMem, !streamed)
		}
		mustEcho(t, c, size)
	}
}

// A handler that answers without reading the streamed field (a refused
// write) is answered; the rest of the field is skipped and the next
// request on the connection is served, also when the handler read part.
func TestUnreadStreamedFieldIsSkipped(t *testing.T) {
	for _, read := range []int{0, 100 << 10} {
		ts, seen := startStreamServer(t, read, 0)
		c := dial(t, ts.addr, ClientConfig{MaxFrame: 64 << 20})
		blob := blobOf(3<<20, 1)
		err := c.Call(context.Background(), "Blob", &tailReq{N: -1, Blob: blob}, &echoResp{})
		requireCode(t, err, api.CodeGrantRefused)
		if st := <-seen; len(st.got) != read || !bytes.Equal(st.got, blob[:read]) {
			t.Fatalf("handler read %d bytes, want %d", len(st.got), read)
		}
		var resp echoResp
		if err := c.Call(context.Background(), "Blob", &tailReq{N: 9, Blob: blob}, &resp); err != nil || resp.N != 9 {
			t.Fatalf("next call: %v", err)
		}
		if st := <-seen; !bytes.Equal(st.got, blob) {
			t.Fatal("the next call's field was not read intact")
		}
	}
}

// A body whose last field is not the streamed one (or not a byte
// string) is read whole and decoded as for Handle: no Tail.
func TestStreamedMethodWithOtherBodiesIsReadWhole(t *testing.T) {
	ts, seen := startStreamServer(t, 0, 0)
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 64 << 20})
	blob := blobOf(1<<20, 3)
	// The struct encoding puts blob before n.
	type blobFirst struct {
		Blob []byte `msgpack:"blob"`
		N    int    `msgpack:"n"`
	}
	if err := c.Call(context.Background(), "Blob", &blobFirst{Blob: blob, N: 4}, &echoResp{}); err != nil {
		t.Fatal(err)
	}
	if st := <-seen; st.tail || !bytes.Equal(st.got, blob) || st.n != 4 {
		t.Fatalf("blob first: tail %v, %d bytes", st.tail, len(st.got))
	}
	// A str, not a bin, in last place.
	if err := c.Call(context.Background(), "Blob", map[string]any{"n": 5, "blob": string(blob)}, &echoResp{}); err != nil {
		t.Fatal(err)
	}
	if st := <-seen; st.tail || !bytes.Equal(st.got, blob) || st.n != 5 {
		t.Fatalf("str blob: tail %v, %d bytes", st.tail, len(st.got))
	}
}

// A client that dies in the middle of a streamed field: the handler's
// read fails (it must not store a partial value), and the server goes on
// serving other connections.
func TestStreamedFieldCutShortFailsTheRead(t *testing.T) {
	for _, name := range []string{"closed", "stalled"} {
		t.Run(name, func(t *testing.T) {
			ts, seen := startStreamServer(t, 0, 300*time.Millisecond)
			nc, _ := rawHandshake(t, ts.addr, "")
			buf, err := encodeFrame(&envelope{kind: kindRequest, id: 1, method: "Blob"}, &tailReq{N: 1, Blob: blobOf(2<<20, 5)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := nc.Write(buf.Bytes()); err != nil {
				t.Fatal(err)
			}
			if _, err := nc.Write(buf.tail[0][:1<<20]); err != nil {
				t.Fatal(err)
			}
			if name == "closed" {
				nc.Close()
			}
			select {
			case st := <-seen:
				if st.readErr == nil || len(st.got) > 1<<20 {
					t.Fatalf("handler read %d bytes, error %v; want a failed read", len(st.got), st.readErr)
				}
				if name == "stalled" && !isTimeout(st.readErr) {
					t.Fatalf("stalled client: %v, want a timeout", st.readErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("handler never returned")
			}
			mustEcho(t, dial(t, ts.addr, ClientConfig{}), 3)
		})
	}
}

// Streamed requests pipelined on one connection from many goroutines
// each reach their handler intact.
func TestStreamedFieldsPipelined(t *testing.T) {
	ts, seen := startStreamServer(t, 0, 0)
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 64 << 20})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := streamMinFrame + i*100003
			errs <- c.Call(context.Background(), "Blob", &tailReq{N: size, Blob: blobOf(size, byte(i))}, &echoResp{})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		st := <-seen
		if !bytes.Equal(st.got, blobOf(st.n, byte((st.n-streamMinFrame)/100003))) {
			t.Fatalf("request of %d bytes arrived altered", st.n)
		}
	}
}

// splitBody takes the field off the end of a map and nothing else.
func TestSplitBody(t *testing.T) {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	head := func(r *tailReq) []byte {
		var buf bytes.Buffer
		e := msgpack.NewEncoder(&buf)
		blob, err := r.EncodeMsgpackHead(e)
		if err != nil {
			t.Fatal(err)
		}
		return append(buf.Bytes(), blob...)
	}
	body := head(&tailReq{N: 7, Blob: []byte("xyz")})
	rest, at, size, ok := splitBody(body, "blob", len(body))
	var got tailDecoded
	if !ok || size != 3 || string(body[at:]) != "xyz" || msgpack.Unmarshal(rest, &got) != nil || got.N != 7 || got.Blob != nil {
		t.Fatalf("split: %v %d %q %+v", ok, size, body[at:], got)
	}
	for name, b := range map[string][]byte{
		"other field":   enc(map[string]any{"other": []byte("x")}),
		"not a map":     enc([]any{1, 2}),
		"empty map":     enc(map[string]any{}),
		"short value":   body[:len(body)-1],
		"trailing byte": append(bytes.Clone(body), 0),
	} {
		if _, _, _, ok := splitBody(b, "blob", len(b)); ok {
			t.Errorf("%s: split", name)
		}
	}
}
