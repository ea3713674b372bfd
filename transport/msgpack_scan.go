package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxNesting bounds how deeply arrays and maps may nest in one frame. The
// msgpack decoder recurses per level; without a bound a small frame of
// nested array headers could exhaust the stack, which Go cannot recover.
const maxNesting = 64

var errTruncated = errors.New("msgpack value truncated")

// checkMsgpack reports whether b is exactly one well-formed msgpack value,
// nested at most maxNesting deep, whose every array and map claims no more
// elements than there are bytes left to hold them. The msgpack decoder
// preallocates from the claimed counts; after this check an allocation is
// bounded by the frame's size instead of by a forged header.
func checkMsgpack(b []byte) error {
	end, err := skipValue(b, 0, 0)
	if err != nil {
		return err
	}
	if end != len(b) {
		return fmt.Errorf("%d trailing bytes after the msgpack value", len(b)-end)
	}
	return nil
}

// skipValue returns the offset just past the value starting at pos.
func skipValue(b []byte, pos, depth int) (int, error) {
	if pos >= len(b) {
		return 0, errTruncated
	}
	c := b[pos]
	pos++
	switch {
	case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		return pos, nil
	case c <= 0x8f: // fixmap
		return skipElems(b, pos, 2*int(c&0x0f), depth)
	case c <= 0x9f: // fixarray
		return skipElems(b, pos, int(c&0x0f), depth)
	case c <= 0xbf: // fixstr
		return skipBytes(b, pos, int(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return pos, nil
	case 0xc4, 0xd9: // bin8, str8
		n, pos, err := readLen(b, pos, 1)
		if err != nil {
			return 0, err
		}
		return skipBytes(b, pos, n)
	case 0xc5, 0xda: // bin16, str16
		n, pos, err := readLen(b, pos, 2)
		if err != nil {
			return 0, err
		}
		return skipBytes(b, pos, n)
	case 0xc6, 0xdb: // bin32, str32
		n, pos, err := readLen(b, pos, 4)
		if err != nil {
			return 0, err
		}
		return skipBytes(b, pos, n)
	case 0xc7, 0xc8, 0xc9: // ext8, ext16, ext32: length, type byte, data
		n, pos, err := readLen(b, pos, 1<<(c-0xc7))
		if err != nil {
			return 0, err
		}
		return skipBytes(b, pos, n+1)
	case 0xca: // float32
		return skipBytes(b, pos, 4)
	case 0xcb: // float64
		return skipBytes(b, pos, 8)
	case 0xcc, 0xd0: // uint8, int8
		return skipBytes(b, pos, 1)
	case 0xcd, 0xd1:
		return skipBytes(b, pos, 2)
	case 0xce, 0xd2:
		return skipBytes(b, pos, 4)
	case 0xcf, 0xd3:
		return skipBytes(b, pos, 8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 plus the type byte
		return skipBytes(b, pos, 1+(1<<(c-0xd4)))
	case 0xdc: // array16
		n, pos, err := readLen(b, pos, 2)
		if err != nil {
			return 0, err
		}
		return skipElems(b, pos, n, depth)
	case 0xdd: // array32
		n, pos, err := readLen(b, pos, 4)
		if err != nil {
			return 0, err
		}
		return skipElems(b, pos, n, depth)
	case 0xde: // map16
		n, pos, err := readLen(b, pos, 2)
		if err != nil {
			return 0, err
		}
		return skipElems(b, pos, 2*n, depth)
	case 0xdf: // map32
		n, pos, err := readLen(b, pos, 4)
		if err != nil {
			return 0, err
		}
		return skipElems(b, pos, 2*n, depth)
	}
	return 0, fmt.Errorf("invalid msgpack code 0x%02x", c)
}

func skipElems(b []byte, pos, n, depth int) (int, error) {
	if depth+1 > maxNesting {
		return 0, fmt.Errorf("msgpack nesting deeper than %d", maxNesting)
	}
	// Every element takes at least one byte.
	if n > len(b)-pos {
		return 0, fmt.Errorf("msgpack container claims %d elements with %d bytes left", n, len(b)-pos)
	}
	var err error
	for i := 0; i < n; i++ {
		if pos, err = skipValue(b, pos, depth+1); err != nil {
			return 0, err
		}
	}
	return pos, nil
}

func skipBytes(b []byte, pos, n int) (int, error) {
	if n < 0 || n > len(b)-pos {
		return 0, errTruncated
	}
	return pos + n, nil
}

// readLen reads a big-endian unsigned length of size bytes.
func readLen(b []byte, pos, size int) (int, int, error) {
	if size > len(b)-pos {
		return 0, 0, errTruncated
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(b[pos])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[pos:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(b[pos:]))
	}
	// n < 2^32, so the int conversion is exact; callers check it against
	// the bytes left.
	return int(n), pos + size, nil
}

// readUint reads an unsigned integer at pos (any msgpack int encoding with a
// non-negative value).
func readUint(b []byte, pos int) (uint64, int, error) {
	if pos >= len(b) {
		return 0, 0, errTruncated
	}
	c := b[pos]
	pos++
	if c <= 0x7f {
		return uint64(c), pos, nil
	}
	var size int
	var signed bool
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2:
		size = 4
	case 0xcf, 0xd3:
		size = 8
	default:
		return 0, 0, fmt.Errorf("expected an unsigned integer, found msgpack code 0x%02x", c)
	}
	signed = c >= 0xd0
	if size > len(b)-pos {
		return 0, 0, errTruncated
	}
	var v uint64
	switch size {
	case 1:
		v = uint64(b[pos])
		if signed && int8(v) < 0 {
			return 0, 0, errors.New("expected an unsigned integer, found a negative one")
		}
	case 2:
		v = uint64(binary.BigEndian.Uint16(b[pos:]))
		if signed && int16(v) < 0 {
			return 0, 0, errors.New("expected an unsigned integer, found a negative one")
		}
	case 4:
		v = uint64(binary.BigEndian.Uint32(b[pos:]))
		if signed && int32(v) < 0 {
			return 0, 0, errors.New("expected an unsigned integer, found a negative one")
		}
	case 8:
		v = binary.BigEndian.Uint64(b[pos:])
		if signed && int64(v) < 0 {
			return 0, 0, errors.New("expected an unsigned integer, found a negative one")
		}
	}
	return v, pos + size, nil
}

// readString reads a str value at pos.
func readString(b []byte, pos int) (string, int, error) {
	if pos >= len(b) {
		return "", 0, errTruncated
	}
	c := b[pos]
	pos++
	var n int
	var err error
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xd9:
		n, pos, err = readLen(b, pos, 1)
	case c == 0xda:
		n, pos, err = readLen(b, pos, 2)
	case c == 0xdb:
		n, pos, err = readLen(b, pos, 4)
	default:
		return "", 0, fmt.Errorf("expected a string, found msgpack code 0x%02x", c)
	}
	if err != nil {
		return "", 0, err
	}
	end, err := skipBytes(b, pos, n)
	if err != nil {
		return "", 0, err
	}
	return string(b[pos:end]), end, nil
}

// readArrayLen reads an array header at pos.
func readArrayLen(b []byte, pos int) (int, int, error) {
	if pos >= len(b) {
		return 0, 0, errTruncated
	}
	c := b[pos]
	pos++
	switch {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), pos, nil
	case c == 0xdc:
		return readLen(b, pos, 2)
	case c == 0xdd:
		return readLen(b, pos, 4)
	}
	return 0, 0, fmt.Errorf("expected an array, found msgpack code 0x%02x", c)
}
