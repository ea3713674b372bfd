package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/testutil"
)

// tailReq is a TailBody: a map {"n": N, "blob": <bin>} whose blob is sent
// as the frame's tail.
type tailReq struct {
	N    int
	Blob []byte
}

func (r *tailReq) EncodeMsgpackHead(enc *msgpack.Encoder) ([]byte, error) {
	if err := enc.EncodeMapLen(2); err != nil {
		return nil, err
	}
	if err := enc.EncodeString("n"); err != nil {
		return nil, err
	}
	if err := enc.EncodeInt(int64(r.N)); err != nil {
		return nil, err
	}
	if err := enc.EncodeString("blob"); err != nil {
		return nil, err
	}
	return r.Blob, enc.EncodeBytesLen(len(r.Blob))
}

type tailDecoded struct {
	N    int    `msgpack:"n"`
	Blob []byte `msgpack:"blob"`
}

// A TailBody's last bytes are not copied into the encode buffer: the frame
// is a short head plus the caller's slice, and the server decodes the two
// as one body.
func TestTailBodyIsSentFromTheCallersSlice(t *testing.T) {
	blob := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	buf, err := encodeFrame(&envelope{kind: kindRequest, id: 1, method: "Tail"}, &tailReq{N: 7, Blob: blob})
	if err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 256 || len(buf.tail) != 1 || len(buf.tail[0]) != len(blob) || &buf.tail[0][0] != &blob[0] {
		t.Fatalf("encode buffer holds %d bytes and a %d-byte tail; want a short head and the caller's slice", buf.Len(), len(buf.tail))
	}
	if got := int(binary.BigEndian.Uint32(buf.Bytes())); got != payloadLen(buf) || got != buf.Len()+len(blob)-frameHeaderLen {
		t.Fatalf("length prefix %d, want head plus tail %d", got, payloadLen(buf))
	}
	releaseFrame(buf)

	var got tailDecoded
	ts := startServer(t, ServerConfig{MaxFrame: 4 << 20}, func(s *Server) {
		Register(s, "Tail", func(_ context.Context, req *tailDecoded) (*echoResp, error) {
			got = *req
			return &echoResp{N: req.N}, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 4 << 20})
	var resp echoResp
	if err := c.Call(context.Background(), "Tail", &tailReq{N: 7, Blob: blob}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.N != 7 || got.N != 7 || !bytes.Equal(got.Blob, blob) {
		t.Fatalf("server decoded n=%d and a %d-byte blob (equal: %v), answered %d", got.N, len(got.Blob), bytes.Equal(got.Blob, blob), resp.N)
	}
	// A tail over the server's limit is refused locally, the connection kept.
	err = c.Call(context.Background(), "Tail", &tailReq{N: 8, Blob: make([]byte, 5<<20)}, nil)
	requireCode(t, err, api.CodeFrameTooLarge)
	mustEcho(t, c, 9)
}

// After the handshake a frame is read into one buffer of its declared
// length (growing by doubling copied a 16 MiB value almost once more);
// a short frame or an oversized claim still fails closed with an error that
// says so.
func TestAuthenticatedFrameReadAllocatesOnce(t *testing.T) {
	allocated := testutil.AllocatedDuring
	frameOf := func(n uint32, body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, n), body...)
	}
	body := bytes.Repeat([]byte{7}, 16<<20)
	raw := frameOf(uint32(len(body)), body)
	var frame []byte
	var err error
	br := bufio.NewReaderSize(bytes.NewReader(raw), 64<<10)
	got := allocated(func() { frame, err = readFrame(nil, br, 64<<20, 0) })
	if err != nil || !bytes.Equal(frame, body) {
		t.Fatalf("16 MiB frame read back wrong: %v", err)
	}
	if got > uint64(len(body))+frameAllocStep {
		t.Fatalf("reading a 16 MiB frame allocated %d bytes, want about 16 MiB", got)
	}
	// Short: the declared length never arrives.
	_, err = readFrame(nil, bufio.NewReader(bytes.NewReader(frameOf(4<<20, make([]byte, 10)))), 64<<20, 0)
	if err == nil || !strings.Contains(err.Error(), "reading a 4194304-byte frame") || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Fatalf("short frame: %v", err)
	}
	// Oversized: refused before anything is allocated for it.
	br = bufio.NewReaderSize(bytes.NewReader(frameOf(1<<30, nil)), 64<<10)
	got = allocated(func() { _, err = readFrame(nil, br, 64<<20, 0) })
	if e := requireCode(t, err, api.CodeFrameTooLarge); !strings.Contains(e.Message, "1073741824") {
		t.Fatalf("oversized claim: %v", e)
	}
	if got > 64<<10 {
		t.Fatalf("refusing a 1 GiB claim allocated %d bytes", got)
	}
}

// releasingTail is a tailReq answer that counts its ReleaseTail calls.
type releasingTail struct {
	tailReq
	released *atomic.Int32
}

func (r *releasingTail) ReleaseTail() { r.released.Add(1) }

// A response body that is a TailReleaser is answered from its slice and
// told once that the slice is free: after the frame was written, or when
// the answer was replaced by an error (too large for the client).
func TestTailReleaserIsReleasedOnceWritten(t *testing.T) {
	blob := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	var released atomic.Int32
	ts := startServer(t, ServerConfig{MaxFrame: 4 << 20}, func(s *Server) {
		Register(s, "Get", func(_ context.Context, req *echoReq) (*releasingTail, error) {
			return &releasingTail{tailReq{N: req.N, Blob: blob[:req.N]}, &released}, nil
		})
	})
	waitReleased := func(want int32) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); released.Load() < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := released.Load(); got != want {
			t.Fatalf("released %d times, want %d", got, want)
		}
	}
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 2 << 20})
	var got tailDecoded
	if err := c.Call(context.Background(), "Get", &echoReq{N: len(blob)}, &got); err != nil || !bytes.Equal(got.Blob, blob) {
		t.Fatalf("answer: %d bytes (equal: %v), %v", len(got.Blob), bytes.Equal(got.Blob, blob), err)
	}
	waitReleased(1)
	small := dial(t, ts.addr, ClientConfig{MaxFrame: 64 << 10})
	err := small.Call(context.Background(), "Get", &echoReq{N: 128 << 10}, &got)
	requireCode(t, err, api.CodeFrameTooLarge)
	waitReleased(2)
}

// tailPartsReq is tailReq with its blob in several slices.
type tailPartsReq struct {
	N     int
	Parts [][]byte
}

func (r *tailPartsReq) EncodeMsgpackHeadParts(enc *msgpack.Encoder) ([][]byte, error) {
	n := 0
	for _, p := range r.Parts {
		n += len(p)
	}
	// tailReq's head, for a blob of the parts' total length.
	_, err := (&tailReq{N: r.N, Blob: make([]byte, n)}).EncodeMsgpackHead(enc)
	return r.Parts, err
}

// A TailPartsBody's slices go out one after the other from the caller's
// memory and arrive as one field, both small (coalesced) and streamed.
func TestTailPartsBodyArrivesJoined(t *testing.T) {
	seen := make(chan tailDecoded, 1)
	ts := startServer(t, ServerConfig{MaxFrame: 8 << 20}, func(s *Server) {
		Register(s, "Tail", func(_ context.Context, req *tailDecoded) (*echoResp, error) {
			seen <- *req
			return &echoResp{N: req.N}, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 8 << 20})
	for _, sizes := range [][]int{{3, 0, 5}, {1 << 20, 7, 2 << 20}} {
		var parts [][]byte
		var whole []byte
		for i, n := range sizes {
			p := bytes.Repeat([]byte{byte('a' + i)}, n)
			parts = append(parts, p)
			whole = append(whole, p...)
		}
		buf, err := encodeFrame(&envelope{kind: kindRequest, id: 1, method: "Tail"}, &tailPartsReq{N: 1, Parts: parts})
		if err != nil || len(buf.tail) != len(parts) || payloadLen(buf) != int(binary.BigEndian.Uint32(buf.Bytes())) {
			t.Fatalf("encoded %d parts for %d, %v", len(buf.tail), len(parts), err)
		}
		releaseFrame(buf)
		var resp echoResp
		if err := c.Call(context.Background(), "Tail", &tailPartsReq{N: len(sizes), Parts: parts}, &resp); err != nil {
			t.Fatal(err)
		}
		got := <-seen
		if got.N != len(sizes) || !bytes.Equal(got.Blob, whole) {
			t.Fatalf("parts %v: server decoded n=%d and %d bytes (equal: %v)", sizes, got.N, len(got.Blob), bytes.Equal(got.Blob, whole))
		}
	}
}
