package transport

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/msgpackscan"
)

// kind says what an envelope is. The handshake kinds come first on every
// connection; after it only requests (client to server), responses and
// go-aways (server to client) flow.
type kind uint8

const (
	kindHello    kind = 1 // server → client: protocol version, nonce, limits
	kindAuth     kind = 2 // client → server: proof of the token, limits
	kindWelcome  kind = 3 // server → client: handshake verdict
	kindRequest  kind = 4
	kindResponse kind = 5
	kindGoAway   kind = 6 // either way: the connection is closing, err says why
)

// envelopeFields is the length of the envelope array:
// [kind, id, method, timeout ms, err, body]. The body is last and inline, so
// it is encoded straight into the frame and decoded from a sub-slice of it
// without a copy.
const envelopeFields = 6

// envelope is one decoded frame payload. body aliases the frame buffer.
type envelope struct {
	kind    kind
	id      uint64
	method  string
	timeout time.Duration // remaining time of the caller's deadline; 0 = none sent
	err     *api.Error
	body    []byte
}

// frameBuf is an encoded frame: buf holds the length prefix and the
// msgpack payload, tail (when a TailBody or TailPartsBody sent one) the
// last bytes of the payload, written from the caller's slices after buf
// without a copy.
type frameBuf struct {
	bytes.Buffer
	tail    [][]byte
	release func() // a TailReleaser's, called once the tail is no longer needed
}

// size is the frame's length on the wire, prefix included.
func (f *frameBuf) size() int {
	n := f.Len()
	for _, p := range f.tail {
		n += len(p)
	}
	return n
}

// TailBody is a request body whose last field is a byte string sent from
// the caller's own slice: EncodeMsgpackHead writes every field and then the
// bin header of that last one, and returns its bytes. The frame goes out as
// the encoded head followed by the slice in one writev, so a large value is
// never copied into an encode buffer. The slice must stay unchanged until
// the call returns (the server has then read the whole frame); a call that
// gives up early may still be writing it.
type TailBody interface {
	EncodeMsgpackHead(enc *msgpack.Encoder) (tail []byte, err error)
}

// TailPartsBody is a TailBody whose last field's bytes are several
// slices (a value split across the caller's buffers): EncodeMsgpackHeadParts
// writes the bin header of their total length and returns them, and they
// are written one after the other, never joined. The same rules hold as
// for a TailBody's slice.
type TailPartsBody interface {
	EncodeMsgpackHeadParts(enc *msgpack.Encoder) (parts [][]byte, err error)
}

// TailReleaser is a TailBody told when the transport is done with its
// tail: ReleaseTail is called once, after the frame was written or once it
// will never be (the connection closed, or the frame was replaced by an
// error), so the tail's memory may then be reused. A frame left queued on
// a connection that closed is never released: its tail is left to the
// garbage collector, never handed back while still in use.
type TailReleaser interface {
	TailBody
	ReleaseTail()
}

var frameBufPool = sync.Pool{New: func() any { return new(frameBuf) }}

// maxPooledFrame keeps the pool from pinning data-plane sized buffers.
const maxPooledFrame = 256 << 10

// encodeFrame builds a whole frame (length prefix included) for env with
// body msgpack-encoded in place (a TailBody's last bytes left in place as
// the frame's tail). The returned buffer comes from a pool: hand it to
// releaseFrame once written.
func encodeFrame(env *envelope, body any) (*frameBuf, error) {
	buf := frameBufPool.Get().(*frameBuf)
	buf.Reset()
	buf.tail, buf.release = nil, nil
	buf.Write([]byte{0, 0, 0, 0})
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	enc.UseCompactInts(true)
	err := enc.EncodeArrayLen(envelopeFields)
	if err == nil {
		err = enc.EncodeUint(uint64(env.kind))
	}
	if err == nil {
		err = enc.EncodeUint(env.id)
	}
	if err == nil {
		err = enc.EncodeString(env.method)
	}
	if err == nil {
		err = enc.EncodeUint(uint64(env.timeout / time.Millisecond))
	}
	if err == nil {
		if env.err == nil {
			err = enc.EncodeNil()
		} else {
			err = enc.Encode(env.err)
		}
	}
	if err == nil {
		if r, ok := body.(TailReleaser); ok {
			buf.release = r.ReleaseTail
		}
		switch tb := body.(type) {
		case TailPartsBody:
			buf.tail, err = tb.EncodeMsgpackHeadParts(enc)
		case TailBody:
			var tail []byte
			if tail, err = tb.EncodeMsgpackHead(enc); len(tail) > 0 {
				buf.tail = [][]byte{tail}
			}
		default:
			err = enc.Encode(body)
		}
	}
	if err != nil {
		releaseFrame(buf)
		return nil, api.Errorf(api.CodeInvalidParams, "encode %s body: %v", describe(env), err)
	}
	n := payloadLen(buf)
	if uint64(n) > maxFrameLimit {
		releaseFrame(buf)
		return nil, errFrameTooLarge(uint64(n), maxFrameLimit)
	}
	binary.BigEndian.PutUint32(buf.Bytes()[:frameHeaderLen], uint32(n))
	return buf, nil
}

func releaseFrame(buf *frameBuf) {
	if buf == nil {
		return
	}
	if buf.release != nil {
		buf.release()
	}
	buf.tail, buf.release = nil, nil // the pool must not pin a caller's value
	if buf.Cap() <= maxPooledFrame {
		frameBufPool.Put(buf)
	}
}

// payloadLen is the size of an encoded frame without its length prefix.
func payloadLen(buf *frameBuf) int { return buf.size() - frameHeaderLen }

// decodeEnvelope parses one frame payload. It first checks that the whole
// payload is a single well-formed, bounded msgpack value, so nothing that
// decodes the body later can be made to over-allocate or recurse too deep.
func decodeEnvelope(payload []byte) (envelope, error) {
	var env envelope
	if err := msgpackscan.Check(payload, msgpackscan.Limits{}); err != nil {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: %v", err)
	}
	n, pos, err := readArrayLen(payload, 0)
	if err != nil {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: %v", err)
	}
	if n != envelopeFields {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: envelope has %d fields, want %d", n, envelopeFields)
	}
	k, pos, err := readUint(payload, pos)
	if err != nil {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: kind: %v", err)
	}
	if k < uint64(kindHello) || k > uint64(kindGoAway) {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: unknown kind %d", k)
	}
	env.kind = kind(k)
	if env.id, pos, err = readUint(payload, pos); err != nil {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: id: %v", err)
	}
	if env.method, pos, err = readString(payload, pos); err != nil {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: method: %v", err)
	}
	ms, pos, err := readUint(payload, pos)
	if err != nil {
		return env, api.Errorf(api.CodeCorrupt, "malformed frame: timeout: %v", err)
	}
	if ms > uint64(maxWireTimeout/time.Millisecond) {
		ms = uint64(maxWireTimeout / time.Millisecond)
	}
	env.timeout = time.Duration(ms) * time.Millisecond
	if payload[pos] == 0xc0 {
		pos++
	} else {
		n, _ := msgpackscan.Walk(payload[pos:], msgpackscan.Limits{}) // checked above
		end := pos + n
		var e api.Error
		if err := msgpack.Unmarshal(payload[pos:end], &e); err != nil {
			return env, api.Errorf(api.CodeCorrupt, "malformed frame: error field: %v", err)
		}
		if e.Code == "" {
			return env, api.Errorf(api.CodeCorrupt, "malformed frame: error without a code")
		}
		env.err = &e
		pos = end
	}
	env.body = payload[pos:]
	return env, nil
}

// maxWireTimeout caps a deadline a peer asks a handler to honour.
const maxWireTimeout = 24 * time.Hour

func describe(env *envelope) string {
	switch env.kind {
	case kindRequest:
		return fmt.Sprintf("%s request", env.method)
	case kindResponse:
		return fmt.Sprintf("%s response", env.method)
	default:
		return fmt.Sprintf("handshake (kind %d)", env.kind)
	}
}
