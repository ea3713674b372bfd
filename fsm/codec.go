package fsm

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/internal/msgpackscan"
)

// Encode renders cmd as a log entry: one type byte, then the msgpack body.
// A body whose V is zero is written with the current version of its type
// (the caller's struct is not modified); an older version is written as
// that version, refused if it sets a field the version does not have; any
// other V is refused, so a leader can never propose an entry its own FSM
// would halt on.
func Encode(cmd Command) ([]byte, error) { return encode(cmd, true) }

// encode is Encode, optionally without the hand-written encoders (a test
// checks the two write the same bytes).
func encode(cmd Command, useFast bool) ([]byte, error) {
	if cmd == nil {
		return nil, fmt.Errorf("%w: nil command", ErrCorruptCommand)
	}
	body, err := withCurrentVersion(cmd)
	if err != nil {
		return nil, err
	}
	if err := checkBounds(body); err != nil {
		return nil, err
	}
	buf := encodeBuffers.Get().(*bytes.Buffer)
	defer putEncodeBuffer(buf)
	buf.Reset()
	buf.WriteByte(byte(body.Type()))
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	if spec := specOf(body.Type()); spec.encodeFast != nil && useFast {
		err = spec.encodeFast(enc, body)
	} else {
		err = enc.Encode(body)
	}
	if err != nil {
		return nil, fmt.Errorf("fsm: encode %s: %w", body.Type(), err)
	}
	if err := fieldsOfVersion(body.Type(), versionOf(body), buf.Bytes()[1:]); err != nil {
		return nil, err
	}
	// The entry is kept (log cache, replication), so it gets its own
	// exactly sized copy; growing a fresh buffer instead allocated about
	// three times the entry's size (BenchmarkEncodeRemove).
	return bytes.Clone(buf.Bytes()), nil
}

// encodeBuffers holds Encode's scratch buffers.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putEncodeBuffer keeps buf for the next Encode unless one large entry
// grew it past what is worth pinning.
func putEncodeBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		encodeBuffers.Put(buf)
	}
}

// withCurrentVersion returns cmd, or a copy of it with V set to the current
// version when V is zero.
func withCurrentVersion(cmd Command) (Command, error) {
	s, err := specOfBody(cmd)
	if err != nil {
		return nil, err
	}
	v := s.version(cmd)
	if v >= 1 && v <= s.current {
		return cmd, nil
	}
	if v != 0 {
		return nil, fmt.Errorf("%w: %s v%d (this build writes v1..v%d)", ErrUnknownVersion, cmd.Type(), v, s.current)
	}
	return s.withVersion(cmd, s.current), nil
}

// fieldsOfVersion refuses a body of version v that names a field added in
// a later version.
func fieldsOfVersion(t CommandType, v uint8, body []byte) error {
	later := specOf(t).v2Fields
	if v >= 2 || len(later) == 0 {
		return nil
	}
	return eachBodyField(body, func(name string) error {
		for _, f := range later {
			if name == f {
				return fmt.Errorf("%w: %s v%d: field %q is not part of v%d", ErrCorruptCommand, t, v, name, v)
			}
		}
		return nil
	})
}

// eachBodyField calls fn with the name of every top-level field of a
// msgpack map body, skipping the values.
func eachBodyField(body []byte, fn func(string) error) error {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(bytes.NewReader(body))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return fmt.Errorf("%w: body is not a map: %v", ErrCorruptCommand, err)
	}
	for i := 0; i < n; i++ {
		k, err := dec.DecodeString()
		if err != nil {
			return fmt.Errorf("%w: field name %d: %v", ErrCorruptCommand, i, err)
		}
		if err := fn(k); err != nil {
			return err
		}
		if err := dec.Skip(); err != nil {
			return fmt.Errorf("%w: field %q: %v", ErrCorruptCommand, k, err)
		}
	}
	return nil
}

// Decode reads a log entry strictly: the type byte must name a command, the
// body's "v" must be a version this build knows (checked before any other
// field is trusted), the body must be one msgpack map with only the fields
// of that version and nothing after it, and every size must be within
// api/limits.go.
func Decode(data []byte) (Command, error) { return decode(data, true) }

// decode is Decode, optionally without the hand-written fast paths (the
// fuzz test compares the two).
func decode(data []byte, useFast bool) (Command, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty entry", ErrCorruptCommand)
	}
	t := CommandType(data[0])
	spec := specOf(t)
	if spec == nil {
		return nil, fmt.Errorf("%w: type byte %d", ErrUnknownCommand, data[0])
	}
	// Walk the body before any decoder sees it: every length it claims
	// must fit the entry, so no decode can allocate past the entry's size.
	n, err := msgpackscan.Walk(data[1:], msgpackscan.Limits{})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptCommand, t, err)
	}
	if n != len(data)-1 {
		return nil, fmt.Errorf("%w: %s: %d trailing bytes", ErrCorruptCommand, t, len(data)-1-n)
	}
	v, err := peekVersion(data[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptCommand, t, err)
	}
	if v < 1 || v > uint64(spec.current) {
		return nil, fmt.Errorf("%w: %s v%d (this build reads v1..v%d)", ErrUnknownVersion, t, v, spec.current)
	}
	if err := fieldsOfVersion(t, uint8(v), data[1:]); err != nil {
		return nil, err
	}
	r := bytes.NewReader(data[1:])
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	dec.DisallowUnknownFields(true)
	// The hand-written decoders build their own body; only the reflection
	// path needs an empty one.
	var body Command
	if spec.decodeFast != nil && useFast {
		if body, err = spec.decodeFast(&fieldDecoder{Decoder: dec}); err != nil {
			return nil, fmt.Errorf("%w: %s v%d: %v", ErrCorruptCommand, t, v, err)
		}
	} else {
		body = spec.newBody()
		if err := dec.Decode(body); err != nil {
			return nil, fmt.Errorf("%w: %s v%d: %v", ErrCorruptCommand, t, v, err)
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %s v%d: %d trailing bytes", ErrCorruptCommand, t, v, r.Len())
	}
	if uint64(spec.version(body)) != v {
		// A second "v" overrode the first one.
		return nil, fmt.Errorf("%w: %s: conflicting \"v\" fields", ErrCorruptCommand, t)
	}
	if err := checkBounds(body); err != nil {
		return nil, err
	}
	return body, nil
}

// peekVersion finds the first "v" in a msgpack map without decoding the
// fields before it (the encoder writes "v" first, so this is cheap). A body
// with no "v" is version 0, which no command has.
func peekVersion(body []byte) (uint64, error) {
	// Fast path: a fixmap whose first field is "v", with a fixint or uint8
	// value (how our encoder writes it).
	if len(body) >= 4 && body[0]&0xf0 == 0x80 && body[0] != 0x80 && body[1] == 0xa1 && body[2] == 'v' {
		switch {
		case body[3] <= 0x7f:
			return uint64(body[3]), nil
		case body[3] == 0xcc && len(body) >= 5:
			return uint64(body[4]), nil
		}
	}
	r := bytes.NewReader(body)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	n, err := dec.DecodeMapLen()
	if err != nil {
		return 0, fmt.Errorf("body is not a map: %v", err)
	}
	if n < 0 || n > len(body) {
		return 0, fmt.Errorf("body map claims %d fields", n)
	}
	for i := 0; i < n; i++ {
		k, err := dec.DecodeString()
		if err != nil {
			return 0, fmt.Errorf("field name %d: %v", i, err)
		}
		if k == "v" {
			v, err := dec.DecodeUint64()
			if err != nil {
				return 0, fmt.Errorf("field \"v\": %v", err)
			}
			return v, nil
		}
		if err := dec.Skip(); err != nil {
			return 0, fmt.Errorf("field %q: %v", k, err)
		}
	}
	return 0, nil
}
