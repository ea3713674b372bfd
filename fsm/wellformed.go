package fsm

import (
	"encoding/binary"
	"fmt"
)

// maxBodyDepth bounds msgpack nesting in a command body; the deepest body
// (PutStart → replicas → replica → DFS descriptor) needs 4.
const maxBodyDepth = 8

// wellFormed walks one msgpack value at the start of b without decoding it
// and returns its length. It checks every length a value claims against the
// bytes that are actually left (each array element or map entry needs at
// least one byte), so the decoder that runs afterwards can never be made to
// allocate more than the entry's own size, however large a length a corrupt
// or hostile entry claims. Nesting is bounded by maxBodyDepth.
func wellFormed(b []byte) (int, error) {
	return walkValue(b, 0, 0)
}

func walkValue(b []byte, off, depth int) (int, error) {
	if off >= len(b) {
		return 0, fmt.Errorf("truncated at byte %d", off)
	}
	c := b[off]
	off++
	switch {
	case c <= 0x7f || c >= 0xe0: // fixints
		return off, nil
	case c <= 0x8f:
		return walkItems(b, off, int(c&0x0f)*2, depth)
	case c <= 0x9f:
		return walkItems(b, off, int(c&0x0f), depth)
	case c <= 0xbf:
		return skipBytes(b, off, int(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3:
		return off, nil
	case 0xcc, 0xd0:
		return skipBytes(b, off, 1)
	case 0xcd, 0xd1:
		return skipBytes(b, off, 2)
	case 0xca, 0xce, 0xd2:
		return skipBytes(b, off, 4)
	case 0xcb, 0xcf, 0xd3:
		return skipBytes(b, off, 8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext: type byte + 1, 2, 4, 8, 16
		return skipBytes(b, off, 1+1<<(c-0xd4))
	case 0xc4, 0xd9: // bin8, str8
		n, off, err := readLen(b, off, 1)
		if err != nil {
			return 0, err
		}
		return skipBytes(b, off, n)
	case 0xc5, 0xda:
		n, off, err := readLen(b, off, 2)
		if err != nil {
			return 0, err
		}
		return skipBytes(b, off, n)
	case 0xc6, 0xdb:
		n, off, err := readLen(b, off, 4)
		if err != nil {
			return 0, err
		}
		return skipBytes(b, off, n)
	case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, type byte, data
		n, off, err := readLen(b, off, 1<<(c-0xc7))
		if err != nil {
			return 0, err
		}
		return skipBytes(b, off, n+1)
	case 0xdc, 0xdd:
		n, off, err := readLen(b, off, 2<<(c-0xdc))
		if err != nil {
			return 0, err
		}
		return walkItems(b, off, n, depth)
	case 0xde, 0xdf:
		n, off, err := readLen(b, off, 2<<(c-0xde))
		if err != nil {
			return 0, err
		}
		if n > len(b) {
			return 0, fmt.Errorf("map at byte %d claims %d entries, %d bytes left", off, n, len(b)-off)
		}
		return walkItems(b, off, n*2, depth)
	}
	return 0, fmt.Errorf("invalid msgpack code 0x%02x at byte %d", c, off-1)
}

// walkItems walks n values (array elements, or map keys and values).
func walkItems(b []byte, off, n, depth int) (int, error) {
	if depth >= maxBodyDepth {
		return 0, fmt.Errorf("nesting deeper than %d at byte %d", maxBodyDepth, off)
	}
	if n > len(b)-off {
		return 0, fmt.Errorf("container at byte %d claims %d items, %d bytes left", off, n, len(b)-off)
	}
	var err error
	for i := 0; i < n; i++ {
		if off, err = walkValue(b, off, depth+1); err != nil {
			return 0, err
		}
	}
	return off, nil
}

func readLen(b []byte, off, width int) (int, int, error) {
	if len(b)-off < width {
		return 0, 0, fmt.Errorf("truncated length at byte %d", off)
	}
	var n uint64
	switch width {
	case 1:
		n = uint64(b[off])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[off:]))
	default:
		n = uint64(binary.BigEndian.Uint32(b[off:]))
	}
	if n > uint64(len(b)) {
		return 0, 0, fmt.Errorf("length %d at byte %d exceeds the %d-byte entry", n, off, len(b))
	}
	return int(n), off + width, nil
}

func skipBytes(b []byte, off, n int) (int, error) {
	if n > len(b)-off {
		return 0, fmt.Errorf("value at byte %d claims %d bytes, %d left", off, n, len(b)-off)
	}
	return off + n, nil
}
