package transport

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"time"

	"sexton/internal/msgpackscan"
)

// A streamed request is an ordinary request frame whose body is a map
// that ends in a bin field (a value sent from the caller's slice, as a
// TailBody or the Python client sends it). The server reads the frame's
// head, hands the handler the body without that field and a Tail to read
// the field's bytes from the socket, and reads the next frame only once
// the handler has read them (or returned; what it left is discarded).
// Nothing changes on the wire, so every client that sends such a frame
// is served either way.
const (
	// streamMinFrame is the smallest frame whose tail is streamed;
	// smaller ones are read whole, and their Tail is in memory.
	streamMinFrame = 256 << 10
	// streamHeadLen is how much of a large frame is read to find its
	// envelope and body head; a head longer than this is read whole.
	streamHeadLen = 16 << 10
)

// streamMethod is a method registered with HandleStream and the name of
// the body field its requests end in.
type streamMethod struct {
	field string
}

// HandleStream serves method with h, streaming the last field of a
// request's body when it is named field and is a byte string: the
// handler's Request.Decode then sees the body without it and
// Request.Tail gives its bytes. A request whose body does not end that
// way is served like one for Handle (Tail returns nil).
func (s *Server) HandleStream(method, field string, h HandlerFunc) {
	s.Handle(method, h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		s.streams = map[string]streamMethod{}
	}
	s.streams[method] = streamMethod{field: field}
}

func (s *Server) streamField(method string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.streams[method]
	return m.field, ok
}

// Tail is the last field of a streamed request's body: Len bytes, read
// with Read. It is valid only during the handler call.
type Tail struct {
	size int64
	mem  []byte        // bytes read with the frame and not yet by Read
	all  []byte        // the whole field, when the frame was read whole
	r    *bufio.Reader // the rest, from the connection; nil when mem is all
	left int64         // bytes of the rest not read yet
	err  error         // the read that failed; later reads fail with it
	done chan struct{} // closed once all is read or the handler returned
	once sync.Once
}

// Len is the field's length.
func (t *Tail) Len() int64 { return t.size }

// Bytes is the whole field when the frame was read whole (it aliases the
// frame), or nil when it streams from the connection.
func (t *Tail) Bytes() []byte {
	return t.all
}

// Read reads the field's next bytes. The field's end is io.EOF; a
// connection that fails first is that error.
func (t *Tail) Read(p []byte) (int, error) {
	if t.err != nil {
		// The read loop owns the connection again: never read it here.
		return 0, t.err
	}
	if len(t.mem) > 0 {
		n := copy(p, t.mem)
		t.mem = t.mem[n:]
		if len(t.mem) == 0 && t.left == 0 {
			t.finish()
		}
		return n, nil
	}
	if t.left == 0 || t.r == nil {
		t.finish()
		return 0, io.EOF
	}
	if int64(len(p)) > t.left {
		p = p[:t.left]
	}
	n, err := t.r.Read(p)
	t.left -= int64(n)
	if t.left == 0 {
		t.finish()
	} else if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		t.err = err
		t.finish()
	}
	return n, err
}

// finish lets the read loop go on.
func (t *Tail) finish() { t.once.Do(func() { close(t.done) }) }

// Tail is the streamed last field of the request's body, or nil when the
// method is not streamed or the body does not end in that field.
func (r *Request) Tail() *Tail { return r.tail }

// readRequest reads the next frame. A large frame of a streamed method
// whose body ends in its field is read up to that field's bytes, which
// the returned Tail then reads from the connection with the frame's read
// deadline still armed; the caller waits for it (afterTail) before the
// next read.
func (sc *serverConn) readRequest() (envelope, *Tail, error) {
	l, limit := sc.link, sc.srv.cfg.MaxFrame
	if _, err := l.br.Peek(1); err != nil {
		return envelope{}, nil, err
	}
	armed := false
	if l.frameTimeout > 0 && !frameBuffered(l.br) {
		if err := l.nc.SetReadDeadline(time.Now().Add(l.frameTimeout)); err != nil {
			return envelope{}, nil, err
		}
		armed = true
	}
	disarm := func() {
		if armed {
			_ = l.nc.SetReadDeadline(time.Time{}) // best effort; the next read sets it again
		}
	}
	hdr, err := l.br.Peek(frameHeaderLen)
	if err != nil {
		disarm()
		return envelope{}, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	if n <= streamMinFrame || n > limit || !sc.srv.hasStreams() {
		frame, err := readFrameAhead(l.br, limit, limit)
		disarm()
		if err != nil {
			return envelope{}, nil, err
		}
		env, err := decodeEnvelope(frame)
		if err != nil {
			return env, nil, err
		}
		return env, sc.splitInMemory(&env), nil
	}
	if _, err := l.br.Discard(frameHeaderLen); err != nil {
		disarm()
		return envelope{}, nil, err
	}
	head := make([]byte, streamHeadLen)
	if _, err := io.ReadFull(l.br, head); err != nil {
		disarm()
		return envelope{}, nil, truncated(err, n)
	}
	env, tail, ok := sc.splitHead(head, n)
	if !ok {
		// Not a streamed request: read the rest and decode it whole.
		frame := make([]byte, n)
		copy(frame, head)
		_, err := io.ReadFull(l.br, frame[len(head):])
		disarm()
		if err != nil {
			return envelope{}, nil, truncated(err, n)
		}
		env, err := decodeEnvelope(frame)
		return env, nil, err
	}
	tail.r, tail.done = l.br, make(chan struct{})
	return env, tail, nil
}

func (s *Server) hasStreams() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.streams) > 0
}

// afterTail waits until the handler has read t or returned, discards
// what it left unread, and disarms the frame's read deadline.
func (sc *serverConn) afterTail(t *Tail) error {
	select {
	case <-t.done:
	case <-sc.link.closing:
		return net.ErrClosed
	}
	if t.left > 0 {
		if _, err := sc.link.br.Discard(int(t.left)); err != nil {
			return err
		}
		t.left = 0
	}
	return sc.link.nc.SetReadDeadline(time.Time{})
}

// splitInMemory gives a streamed method's request read whole its Tail
// (aliasing the frame) and the body without the field; other requests
// are left as they are.
func (sc *serverConn) splitInMemory(env *envelope) *Tail {
	if env.kind != kindRequest {
		return nil
	}
	field, ok := sc.srv.streamField(env.method)
	if !ok {
		return nil
	}
	whole := env.body
	body, at, size, ok := splitBody(whole, field, len(whole))
	if !ok {
		return nil
	}
	env.body = body
	return &Tail{size: size, mem: whole[at:], all: whole[at:], done: make(chan struct{})}
}

// splitHead parses a large frame's head: the envelope of a request for a
// streamed method and its body up to the field's bytes. It returns the
// envelope with the body without the field, and the Tail (its first
// bytes those of the head past the field's header).
func (sc *serverConn) splitHead(head []byte, n int) (envelope, *Tail, bool) {
	var env envelope
	pos, ok := envelopePrefix(head, &env)
	if !ok || env.kind != kindRequest {
		return env, nil, false
	}
	field, ok := sc.srv.streamField(env.method)
	if !ok {
		return env, nil, false
	}
	body, at, size, ok := splitBody(head[pos:], field, n-pos)
	if !ok {
		return env, nil, false
	}
	if err := msgpackscan.Check(body, msgpackscan.Limits{}); err != nil {
		return env, nil, false
	}
	env.body = body
	pre := head[pos+at:]
	return env, &Tail{size: size, mem: pre, left: size - int64(len(pre))}, true
}

// envelopePrefix parses the envelope's fields before the body from the
// start of a payload; ok is false for anything but a request without an
// error whose fields all lie in b.
func envelopePrefix(b []byte, env *envelope) (int, bool) {
	n, pos, err := readArrayLen(b, 0)
	if err != nil || n != envelopeFields {
		return 0, false
	}
	k, pos, err := readUint(b, pos)
	if err != nil || k != uint64(kindRequest) {
		return 0, false
	}
	env.kind = kindRequest
	if env.id, pos, err = readUint(b, pos); err != nil {
		return 0, false
	}
	if env.method, pos, err = readString(b, pos); err != nil {
		return 0, false
	}
	ms, pos, err := readUint(b, pos)
	if err != nil {
		return 0, false
	}
	env.timeout = time.Duration(min(ms, uint64(maxWireTimeout/time.Millisecond))) * time.Millisecond
	if pos >= len(b) || b[pos] != 0xc0 {
		return 0, false
	}
	return pos + 1, true
}

// splitBody finds, in the start of a body of total bytes, a map whose
// last entry is field with a bin value that runs to the body's end. It
// returns the map without that entry, where the bin's bytes start, and
// their length.
func splitBody(b []byte, field string, total int) ([]byte, int, int64, bool) {
	if len(b) == 0 {
		return nil, 0, 0, false
	}
	var count, pos int
	switch c := b[0]; {
	case c >= 0x80 && c <= 0x8f:
		count, pos = int(c&0x0f), 1
	case c == 0xde && len(b) >= 3:
		count, pos = int(binary.BigEndian.Uint16(b[1:3])), 3
	case c == 0xdf && len(b) >= 5:
		count, pos = int(binary.BigEndian.Uint32(b[1:5])), 5
	default:
		return nil, 0, 0, false
	}
	if count == 0 {
		return nil, 0, 0, false
	}
	first := pos
	for i := 0; i < count-1; i++ {
		for range 2 {
			m, err := msgpackscan.Walk(b[pos:], msgpackscan.Limits{})
			if err != nil {
				return nil, 0, 0, false
			}
			pos += m
		}
	}
	last := pos
	kl, err := msgpackscan.Walk(b[pos:], msgpackscan.Limits{})
	if err != nil {
		return nil, 0, 0, false
	}
	if name, _, err := readString(b[pos:pos+kl], 0); err != nil || name != field {
		return nil, 0, 0, false
	}
	pos += kl
	size, hl, ok := binHeader(b[pos:])
	if !ok || int64(total-pos-hl) != size {
		return nil, 0, 0, false
	}
	out := make([]byte, 0, 5+last-first)
	if count-1 < 16 {
		out = append(out, 0x80|byte(count-1))
	} else {
		out = binary.BigEndian.AppendUint32(append(out, 0xdf), uint32(count-1))
	}
	return append(out, b[first:last]...), pos + hl, size, true
}

// binHeader reads a msgpack bin header: the length it declares and its
// own length.
func binHeader(b []byte) (int64, int, bool) {
	if len(b) < 2 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xc4:
		return int64(b[1]), 2, true
	case 0xc5:
		if len(b) >= 3 {
			return int64(binary.BigEndian.Uint16(b[1:3])), 3, true
		}
	case 0xc6:
		if len(b) >= 5 {
			return int64(binary.BigEndian.Uint32(b[1:5])), 5, true
		}
	}
	return 0, 0, false
}
