package msgpackscan

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxDepth bounds container nesting, for every walk in sexton (log
// entries, frames, snapshots, the holder's files). The msgpack decoder
// recurses once per level, so an unbounded depth would let a small input
// exhaust the stack, which Go cannot recover; the deepest value sexton
// writes (a snapshot's DFS record) nests well under it.
const MaxDepth = 32

// ErrMalformed is wrapped by every refusal.
var ErrMalformed = errors.New("malformed msgpack")

// Limits bound a walk beyond what every walk checks (the bytes present,
// MaxDepth).
type Limits struct {
	// MaxItems bounds the elements of one array and the entries of one map
	// (0: only the bytes left bound them, each item needing at least one).
	MaxItems int
}

// Walk returns the length of the one msgpack value at the start of b. Every
// array element or map entry needs at least one byte, so a container
// claiming more items than bytes are left is refused, and so is one over
// lim.MaxItems: a decoder that runs afterwards allocates no more than the
// input's own size (times the decoded type's size) whatever it claims.
func Walk(b []byte, lim Limits) (int, error) {
	w := walker{b: b, lim: lim}
	return w.value(0, 0)
}

// Check reports whether b is exactly one well-formed msgpack value within lim.
func Check(b []byte, lim Limits) error {
	n, err := Walk(b, lim)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%w: %d bytes after the value", ErrMalformed, len(b)-n)
	}
	return nil
}

type walker struct {
	b   []byte
	lim Limits
}

func (w *walker) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func (w *walker) value(off, depth int) (int, error) {
	b := w.b
	if off >= len(b) {
		return 0, w.fail("truncated at byte %d", off)
	}
	c := b[off]
	off++
	switch {
	case c <= 0x7f || c >= 0xe0: // fixints
		return off, nil
	case c <= 0x8f:
		return w.items(off, int(c&0x0f), 2, depth)
	case c <= 0x9f:
		return w.items(off, int(c&0x0f), 1, depth)
	case c <= 0xbf:
		return w.skip(off, int(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3:
		return off, nil
	case 0xcc, 0xd0:
		return w.skip(off, 1)
	case 0xcd, 0xd1:
		return w.skip(off, 2)
	case 0xca, 0xce, 0xd2:
		return w.skip(off, 4)
	case 0xcb, 0xcf, 0xd3:
		return w.skip(off, 8)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext: type byte + 1, 2, 4, 8, 16
		return w.skip(off, 1+1<<(c-0xd4))
	case 0xc4, 0xd9: // bin8, str8
		return w.sized(off, 1)
	case 0xc5, 0xda:
		return w.sized(off, 2)
	case 0xc6, 0xdb:
		return w.sized(off, 4)
	case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, type byte, data
		n, off, err := w.length(off, 1<<(c-0xc7))
		if err != nil {
			return 0, err
		}
		return w.skip(off, n+1)
	case 0xdc, 0xdd:
		n, off, err := w.count(off, 2<<(c-0xdc))
		if err != nil {
			return 0, err
		}
		return w.items(off, n, 1, depth)
	case 0xde, 0xdf:
		n, off, err := w.count(off, 2<<(c-0xde))
		if err != nil {
			return 0, err
		}
		return w.items(off, n, 2, depth)
	}
	return 0, w.fail("invalid code 0x%02x at byte %d", c, off-1)
}

// items walks n items of per values each (1 for an array, 2 for a map).
func (w *walker) items(off, n, per, depth int) (int, error) {
	if depth >= MaxDepth {
		return 0, w.fail("nesting deeper than %d at byte %d", MaxDepth, off)
	}
	if w.lim.MaxItems > 0 && n > w.lim.MaxItems {
		return 0, w.fail("container at byte %d claims %d elements, more than %d", off, n, w.lim.MaxItems)
	}
	if n > (len(w.b)-off)/per {
		return 0, w.fail("container at byte %d claims %d elements, %d bytes left", off, n, len(w.b)-off)
	}
	var err error
	for i := 0; i < n*per; i++ {
		if off, err = w.value(off, depth+1); err != nil {
			return 0, err
		}
	}
	return off, nil
}

// sized skips a bin or str whose length field is width bytes.
func (w *walker) sized(off, width int) (int, error) {
	n, off, err := w.length(off, width)
	if err != nil {
		return 0, err
	}
	return w.skip(off, n)
}

// length reads a byte length of width bytes, refused when it exceeds the
// whole input.
func (w *walker) length(off, width int) (int, int, error) {
	n, next, err := w.field(off, width)
	if err != nil {
		return 0, 0, err
	}
	if n > uint64(len(w.b)) {
		return 0, 0, w.fail("length %d at byte %d exceeds the %d bytes given", n, off, len(w.b))
	}
	return int(n), next, nil
}

// count reads a container's element count of width bytes (items checks
// it against the bytes left).
func (w *walker) count(off, width int) (int, int, error) {
	n, next, err := w.field(off, width)
	if err != nil {
		return 0, 0, err
	}
	if n > uint64(len(w.b)) {
		return 0, 0, w.fail("container at byte %d claims %d elements, %d bytes left", next, n, len(w.b)-next)
	}
	return int(n), next, nil
}

// field reads a big-endian unsigned field of width 1, 2 or 4 bytes.
func (w *walker) field(off, width int) (uint64, int, error) {
	b := w.b
	if len(b)-off < width {
		return 0, 0, w.fail("truncated length at byte %d", off)
	}
	return Uint(b[off:], width), off + width, nil
}

// Uint is the big-endian unsigned integer in b's first width bytes (1, 2,
// 4 or 8; the caller checks that b holds them), as msgpack writes lengths
// and integers.
func Uint(b []byte, width int) uint64 {
	switch width {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	default:
		return binary.BigEndian.Uint64(b)
	}
}

func (w *walker) skip(off, n int) (int, error) {
	if n > len(w.b)-off {
		return 0, w.fail("value at byte %d claims %d bytes, %d left", off, n, len(w.b)-off)
	}
	return off + n, nil
}
