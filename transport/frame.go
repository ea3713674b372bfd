package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"sexton/api"
)

// Frame limits. A frame is a big-endian u32 payload length followed by the
// payload (one msgpack envelope).
const (
	frameHeaderLen = 4
	// DefaultMaxFrame bounds control-plane frames.
	DefaultMaxFrame = 4 << 20
	// maxFrameLimit is the largest MaxFrame a config may ask for: the u32
	// length prefix could say 4 GiB, but nothing in sexton needs more than
	// a bucket plus envelope, so bigger configs are clamped here.
	maxFrameLimit = 1 << 30
	// handshakeMaxFrame bounds every frame read before a peer has
	// authenticated, so an unauthenticated peer cannot make us allocate
	// more than this.
	handshakeMaxFrame = 16 << 10
	// frameAllocStep is how much of a large frame readFrameBody allocates
	// ahead of the bytes actually received, so a peer that claims a big
	// frame and then stalls holds at most this much memory more than it
	// sent. Frames read after the handshake are allocated whole instead
	// (readFrame).
	frameAllocStep = 1 << 20
)

// errFrameTooLarge is a frame-size refusal; it carries the numbers so both
// the log and the peer see them.
func errFrameTooLarge(n uint64, limit int) *api.Error {
	return api.Errorf(api.CodeFrameTooLarge, "frame of %d bytes exceeds the %d-byte limit", n, limit)
}

// readFrame reads one frame from br. It waits without a deadline for the
// first byte (idle connections are allowed), then gives the rest of the
// frame frameTimeout to arrive (a half-sent frame times out). A frame longer
// than limit is refused before anything is allocated for it; a frame within
// it is allocated at its declared length at once, because growing a 16 MiB
// value's buffer by doubling copied it almost once more. Only an
// authenticated peer gets here (the handshake reads with readFrameBody), and
// what it can pin is bounded by its in-flight slots times limit, for at most
// frameTimeout per stalled frame.
func readFrame(nc net.Conn, br *bufio.Reader, limit int, frameTimeout time.Duration) ([]byte, error) {
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	if frameTimeout > 0 && !frameBuffered(br) {
		if err := nc.SetReadDeadline(time.Now().Add(frameTimeout)); err != nil {
			return nil, err
		}
		defer nc.SetReadDeadline(time.Time{}) //nolint:errcheck // best effort; the next read sets it again
	}
	return readFrameAhead(br, limit, limit)
}

// frameBuffered reports whether a whole frame already sits in br, so it
// can be taken without arming a read deadline (the common case under load,
// where many small frames arrive in one read).
func frameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < frameHeaderLen {
		return false
	}
	hdr, err := br.Peek(frameHeaderLen)
	if err != nil {
		return false
	}
	return uint64(binary.BigEndian.Uint32(hdr)) <= uint64(n-frameHeaderLen)
}

// readFrameBody reads the header and payload of one frame, refusing a
// length over limit before allocating and allocating a large frame as its
// bytes arrive. It is separate from readFrame so the handshake and the fuzz
// target can drive it from a plain reader.
func readFrameBody(r io.Reader, limit int) ([]byte, error) {
	return readFrameAhead(r, limit, frameAllocStep)
}

// readFrameAhead reads one frame, allocating at most ahead bytes beyond
// those received: a frame up to ahead bytes is read into one buffer of its
// declared length; a longer one grows with the bytes that arrive.
func readFrameAhead(r io.Reader, limit, ahead int) ([]byte, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(limit) {
		return nil, errFrameTooLarge(uint64(n), limit)
	}
	if n == 0 {
		return nil, api.Errorf(api.CodeCorrupt, "empty frame")
	}
	if uint64(n) <= uint64(max(ahead, frameAllocStep)) {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, truncated(err, int(n))
		}
		return buf, nil
	}
	// Large frame: grow with the bytes that actually arrive.
	buf := make([]byte, 0, frameAllocStep)
	for len(buf) < int(n) {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(int(n), 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < int(n) {
			return nil, truncated(err, int(n))
		}
	}
	return buf, nil
}

func truncated(err error, want int) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading a %d-byte frame: %w", want, err)
}

// orDefault is v, or d when v is not set (zero or below).
func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// clampMaxFrame turns a configured MaxFrame into the one in force.
func clampMaxFrame(n int) int {
	switch {
	case n <= 0:
		return DefaultMaxFrame
	case n > maxFrameLimit:
		return maxFrameLimit
	case n < handshakeMaxFrame:
		return handshakeMaxFrame
	default:
		return n
	}
}
