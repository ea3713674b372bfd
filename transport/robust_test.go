package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"sexton/api"
	"sexton/internal/testutil"
)

// An authenticated client that claims a frame over the limit is told
// FRAME_TOO_LARGE and disconnected; another client on the same server is
// not disturbed.
func TestOversizedFrameRefusedOthersUnaffected(t *testing.T) {
	ts := startServer(t, ServerConfig{MaxFrame: 64 << 10}, nil)
	good := dial(t, ts.addr, ClientConfig{})
	mustEcho(t, good, 1)

	nc, l := rawHandshake(t, ts.addr, "")
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<30) // 1 GiB
	if _, err := nc.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	why := readUntilClosed(t, nc, l.br)
	if why == nil || why.Code != api.CodeFrameTooLarge || !strings.Contains(why.Message, "1073741824") {
		t.Fatalf("oversized frame answered %v, want FRAME_TOO_LARGE naming the size", why)
	}
	mustEcho(t, good, 2)
	if ts.Stats().Dropped != 1 {
		t.Fatalf("dropped = %d, want 1", ts.Stats().Dropped)
	}
}

// readFrameBody refuses an oversized claim before allocating for it, and
// for a large allowed claim allocates only as the bytes arrive.
func TestFrameReadAllocatesOnlyWhatArrives(t *testing.T) {
	allocated := testutil.AllocatedDuring
	claim := func(n uint32, body []byte) io.Reader {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], n)
		return io.MultiReader(bytes.NewReader(hdr[:]), bytes.NewReader(body))
	}
	var err error
	got := allocated(func() { _, err = readFrameBody(claim(1<<31, nil), 4<<20) })
	requireCode(t, err, api.CodeFrameTooLarge)
	if got > 64<<10 {
		t.Fatalf("refusing a 2 GiB claim allocated %d bytes", got)
	}
	// A 200 MiB claim under a 300 MiB limit that then sends 10 bytes.
	got = allocated(func() { _, err = readFrameBody(claim(200<<20, make([]byte, 10)), 300<<20) })
	if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("truncated frame: %v", err)
	}
	if got > 2*frameAllocStep {
		t.Fatalf("a stalled 200 MiB claim allocated %d bytes", got)
	}
	// And a whole large frame still reads intact.
	body := bytes.Repeat([]byte{7}, 3*frameAllocStep+5)
	frame, err := readFrameBody(claim(uint32(len(body)), body), 300<<20)
	if err != nil || !bytes.Equal(frame, body) {
		t.Fatalf("large frame read back wrong: %v", err)
	}
}

// Garbage instead of a handshake (here an HTTP request) is refused and the
// connection closed; garbage after the handshake too. Other clients go on.
func TestGarbageBytesRefused(t *testing.T) {
	ts := startServer(t, ServerConfig{}, nil)
	good := dial(t, ts.addr, ClientConfig{})

	nc, l := rawConn(t, ts.addr)
	// Read the hello, then answer with an HTTP request.
	if _, err := readFrameBody(l.br, handshakeMaxFrame); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	why := readUntilClosed(t, nc, l.br)
	if why == nil || !strings.Contains(why.Message, "handshake") {
		t.Fatalf("HTTP garbage answered %v", why)
	}
	mustEcho(t, good, 1)

	nc2, l2 := rawHandshake(t, ts.addr, "")
	junk := []byte{0, 0, 0, 8, 0xc1, 0xff, 0x00, 0x91, 0xdd, 0xff, 0xff, 0xff}
	if _, err := nc2.Write(junk); err != nil {
		t.Fatal(err)
	}
	why = readUntilClosed(t, nc2, l2.br)
	if why == nil || why.Code != api.CodeCorrupt {
		t.Fatalf("garbage frame answered %v, want CORRUPT", why)
	}
	mustEcho(t, good, 2)
	if st := ts.Stats(); st.Refused != 1 || st.Dropped != 1 {
		t.Fatalf("refused %d dropped %d, want 1 and 1", st.Refused, st.Dropped)
	}
}

// A frame whose msgpack claims far more elements than it carries, or nests
// too deep, is refused before the decoder can allocate or recurse for it.
func TestForgedMsgpackCountsRefused(t *testing.T) {
	env := []byte{0x96, byte(kindRequest), 1, 0xa4, 'E', 'c', 'h', 'o', 0, 0xc0}
	huge := append(append([]byte{}, env...), 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0)
	if _, err := decodeEnvelope(huge); err == nil || !strings.Contains(err.Error(), "claims 4294967295 elements") {
		t.Fatalf("forged array count: %v", err)
	}
	deep := append(append([]byte{}, env...), bytes.Repeat([]byte{0x91}, 200)...)
	deep = append(deep, 0xc0)
	if _, err := decodeEnvelope(deep); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Fatalf("deep nesting: %v", err)
	}
	trailing := append(append([]byte{}, env...), 0xc0, 0xc0)
	if _, err := decodeEnvelope(trailing); err == nil {
		t.Fatal("trailing bytes accepted")
	}
}

// A client that connects and says nothing is cut off by the handshake
// timeout; one that sends half a frame is cut off by the frame timeout; an
// idle authenticated connection is left alone; others are served all along.
func TestStalledClientsTimeOutOthersServed(t *testing.T) {
	ts := startServer(t, ServerConfig{HandshakeTimeout: 300 * time.Millisecond, FrameTimeout: 300 * time.Millisecond}, nil)
	good := dial(t, ts.addr, ClientConfig{})
	idle := dial(t, ts.addr, ClientConfig{})

	silent, sl := rawConn(t, ts.addr)
	half, hl := rawHandshake(t, ts.addr, "")
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 100)
	if _, err := half.Write(append(hdr[:], 0x96, 4)); err != nil {
		t.Fatal(err)
	}
	// While both stall, the good client is served.
	for i := range 20 {
		mustEcho(t, good, i)
	}
	readUntilClosed(t, silent, sl.br) // the hello, then EOF
	why := readUntilClosed(t, half, hl.br)
	if why == nil || why.Code != api.CodeTimeout || !strings.Contains(why.Message, "frame not completed") {
		t.Fatalf("half-sent frame answered %v, want TIMEOUT", why)
	}
	time.Sleep(700 * time.Millisecond) // idle for longer than the frame timeout
	mustEcho(t, idle, 9)
	mustEcho(t, good, 10)
	if st := ts.Stats(); st.Refused != 1 || st.Dropped != 1 {
		t.Fatalf("refused %d dropped %d, want 1 and 1", st.Refused, st.Dropped)
	}
}

// A request over the server's advertised limit fails locally with
// FRAME_TOO_LARGE and does not cost the connection; a response over the
// client's limit is replaced by the server with FRAME_TOO_LARGE.
func TestFrameLimitsEnforcedWithoutLosingTheConnection(t *testing.T) {
	ts := startServer(t, ServerConfig{MaxFrame: 64 << 10}, func(s *Server) {
		s.Handle("Big", func(ctx context.Context, req *Request) (any, error) {
			return &echoResp{Pad: strings.Repeat("y", 100<<10)}, nil
		})
	})
	c := dial(t, ts.addr, ClientConfig{MaxFrame: 64 << 10})
	ae := requireCode(t, c.Call(context.Background(), "Echo", &echoReq{Pad: strings.Repeat("x", 100<<10)}, nil), api.CodeFrameTooLarge)
	if !strings.Contains(ae.Message, "65536") {
		t.Fatalf("message should name the limit: %q", ae.Message)
	}
	mustEcho(t, c, 1)
	var resp echoResp
	ae = requireCode(t, c.Call(context.Background(), "Big", nil, &resp), api.CodeFrameTooLarge)
	if !strings.Contains(ae.Message, "response") || resp.Pad != "" {
		t.Fatalf("oversized response: %q", ae.Message)
	}
	mustEcho(t, c, 2)

	// A data-plane sized pair works with big frames.
	big := startServer(t, ServerConfig{MaxFrame: 8 << 20}, nil)
	bc := dial(t, big.addr, ClientConfig{MaxFrame: 8 << 20})
	pad := strings.Repeat("z", 5<<20)
	if err := bc.Call(context.Background(), "Echo", &echoReq{N: 1, Pad: pad}, &resp); err != nil || resp.Pad != pad {
		t.Fatalf("5 MiB echo: %v", err)
	}
}
