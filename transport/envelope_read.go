package transport

import (
	"errors"
	"fmt"

	"sexton/internal/msgpackscan"
)

var errTruncated = errors.New("msgpack value truncated")

// The envelope's field readers. decodeEnvelope runs them only after
// msgpackscan.Check accepted the whole payload (every length backed by
// bytes, nesting bounded), so they read fields, they do not police them.

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
	n := msgpackscan.Uint(b[pos:], size)
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
	v := msgpackscan.Uint(b[pos:], size)
	if signed && v>>(8*size-1) != 0 {
		return 0, 0, errors.New("expected an unsigned integer, found a negative one")
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
