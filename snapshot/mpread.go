package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"sexton/internal/msgpackscan"
)

// mpReader decodes msgpack values from one chunk held in memory. It is
// hand-written rather than msgpack.Decoder for two reasons: reflection
// decoding of a claimed array length allocates the whole slice up front
// (a 5-byte array32 header could ask for gigabytes), and the metadata
// section of a large cluster holds a million records, where reflection
// costs most of the read time. Every length it returns is already checked
// against the bytes that remain, so a caller allocating from it allocates
// at most in proportion to the chunk.
type mpReader struct {
	b   []byte
	off int
	in  *interner // nil: no sharing
}

func (r *mpReader) remaining() int { return len(r.b) - r.off }

func errShort(what string) error {
	return fmt.Errorf("%w: record ends inside %s", ErrCorrupt, what)
}

func errType(what string, c byte) error {
	return fmt.Errorf("%w: %s: unexpected msgpack code 0x%02x", ErrCorrupt, what, c)
}

func (r *mpReader) code(what string) (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort(what)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *mpReader) take(n int, what string) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, errShort(what)
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p, nil
}

func (r *mpReader) be(n int, what string) (uint64, error) {
	p, err := r.take(n, what)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(p[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), nil
	default:
		return binary.BigEndian.Uint64(p), nil
	}
}

// peekNil consumes a msgpack nil if one is next.
func (r *mpReader) peekNil() bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return false
}

// mapLen reads a map header; nil reads as -1. The count is bounded by the
// remaining bytes (every entry takes at least two).
func (r *mpReader) mapLen(what string) (int, error) {
	return r.headerLen(what, 0x80, 0xde, 0xdf, 2, "map claims %d entries")
}

// arrayLen reads an array header; nil reads as -1. The count is bounded by
// the remaining bytes (every element takes at least one).
func (r *mpReader) arrayLen(what string) (int, error) {
	return r.headerLen(what, 0x90, 0xdc, 0xdd, 1, "array claims %d elements")
}

// headerLen reads a map or an array header: a fixed one (fix to fix+15),
// one with a 16-bit (c16) or 32-bit (c32) count, or nil (-1). A count of
// more items than the remaining bytes hold at minItem bytes each is
// refused with claims, which formats the count.
func (r *mpReader) headerLen(what string, fix, c16, c32 byte, minItem int, claims string) (int, error) {
	c, err := r.code(what)
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c >= fix && c <= fix|0x0f:
		n = uint64(c & 0x0f)
	case c == c16:
		n, err = r.be(2, what)
	case c == c32:
		n, err = r.be(4, what)
	case c == 0xc0:
		return -1, nil
	default:
		return 0, errType(what, c)
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(r.remaining()/minItem) {
		return 0, fmt.Errorf("%w: %s: "+claims+" in %d bytes", ErrCorrupt, what, n, r.remaining())
	}
	return int(n), nil
}

// strBytes reads a msgpack str; the result aliases the chunk.
func (r *mpReader) strBytes(what string) ([]byte, error) {
	c, err := r.code(what)
	if err != nil {
		return nil, err
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, err = r.be(1, what)
	case c == 0xda:
		n, err = r.be(2, what)
	case c == 0xdb:
		n, err = r.be(4, what)
	default:
		return nil, errType(what, c)
	}
	if err != nil {
		return nil, err
	}
	if n > uint64(r.remaining()) {
		return nil, errShort(what)
	}
	return r.take(int(n), what)
}

// str reads a msgpack str of at most limit bytes into a new string.
func (r *mpReader) str(what string, limit int) (string, error) {
	p, err := r.strBytesMax(what, limit)
	return string(p), err
}

// strBytesMax is strBytes refusing more than limit bytes.
func (r *mpReader) strBytesMax(what string, limit int) ([]byte, error) {
	p, err := r.strBytes(what)
	if err == nil && len(p) > limit {
		return nil, errTooLong(what, len(p), limit)
	}
	return p, err
}

func errTooLong(what string, n, limit int) error {
	return fmt.Errorf("%w: %s: %d bytes exceeds %d", ErrTooLarge, what, n, limit)
}

// integer reads any msgpack integer: its 64 bits and whether it was
// written signed (then the bits are its two's complement).
func (r *mpReader) integer(what string) (bits uint64, signed bool, err error) {
	c, err := r.code(what)
	if err != nil {
		return 0, false, err
	}
	switch {
	case c <= 0x7f:
		return uint64(c), false, nil
	case c >= 0xe0:
		return uint64(int64(int8(c))), true, nil
	case c >= 0xcc && c <= 0xcf: // uint8..uint64
		bits, err = r.be(1<<(c-0xcc), what)
		return bits, false, err
	case c >= 0xd0 && c <= 0xd3: // int8..int64
		n := 1 << (c - 0xd0)
		bits, err = r.be(n, what)
		return uint64(signExtend(bits, n)), true, err
	default:
		return 0, false, errType(what, c)
	}
}

// uint reads any msgpack integer that is not negative.
func (r *mpReader) uint(what string) (uint64, error) {
	v, signed, err := r.integer(what)
	switch {
	case err != nil:
		return 0, err
	case signed && int64(v) < 0:
		return 0, fmt.Errorf("%w: %s: negative value for an unsigned field", ErrCorrupt, what)
	}
	return v, nil
}

// uint8 reads an integer that must fit in a byte.
func (r *mpReader) uint8(what string) (uint8, error) {
	v, err := r.uint(what)
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint8 {
		return 0, fmt.Errorf("%w: %s: %d does not fit a byte", ErrCorrupt, what, v)
	}
	return uint8(v), nil
}

// int reads any msgpack integer that fits an int64.
func (r *mpReader) int(what string) (int64, error) {
	v, signed, err := r.integer(what)
	switch {
	case err != nil:
		return 0, err
	case !signed && v > math.MaxInt64:
		return 0, fmt.Errorf("%w: %s: %d overflows int64", ErrCorrupt, what, v)
	}
	return int64(v), nil
}

func signExtend(v uint64, n int) int64 {
	shift := 64 - 8*uint(n)
	return int64(v<<shift) >> shift
}

func (r *mpReader) bool(what string) (bool, error) {
	c, err := r.code(what)
	if err != nil {
		return false, err
	}
	switch c {
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	default:
		return false, errType(what, c)
	}
}

// skip steps over one well-formed value of any type (nesting bounded by
// msgpackscan.MaxDepth, every length backed by bytes present). It
// delimits opaque records without decoding them, with the walker fsm,
// transport and the holder use.
func (r *mpReader) skip() error {
	n, err := msgpackscan.Walk(r.b[r.off:], msgpackscan.Limits{})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	r.off += n
	return nil
}

// binBytes reads a msgpack bin of at most limit bytes into a new slice;
// nil reads as nil.
func (r *mpReader) binBytes(what string, limit int) ([]byte, error) {
	if r.peekNil() {
		return nil, nil
	}
	c, err := r.code(what)
	if err != nil {
		return nil, err
	}
	var n uint64
	switch c {
	case 0xc4:
		n, err = r.be(1, what)
	case 0xc5:
		n, err = r.be(2, what)
	case 0xc6:
		n, err = r.be(4, what)
	default:
		return nil, errType(what, c)
	}
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, errTooLong(what, int(min(n, 1<<31)), limit)
	}
	p, err := r.take(int(n), what)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(p), nil
}

// boundedArrayLen is arrayLen refusing more than max elements with
// ErrTooLarge, said as "owner has n items, more than max".
func (r *mpReader) boundedArrayLen(what string, max int, owner, items string) (int, error) {
	n, err := r.arrayLen(what)
	if err == nil && n > max {
		err = fmt.Errorf("%w: %s has %d %s, more than %d", ErrTooLarge, owner, n, items, max)
	}
	return n, err
}

// arrayOf decodes an array of at most max elements (boundedArrayLen), each
// with one; a nil array is a nil slice. Every element takes at least one
// byte, so the allocation is bounded by the chunk.
func arrayOf[T any](r *mpReader, what string, max int, owner, items string, one func(*mpReader, *T) error) ([]T, error) {
	n, err := r.boundedArrayLen(what, max, owner, items)
	if err != nil || n < 0 {
		return nil, err
	}
	return decodeInto(r, make([]T, n), one)
}

// optional decodes a record that may be nil with one; nil reads as a nil
// pointer.
func optional[T any](r *mpReader, one func(*mpReader, *T) error) (*T, error) {
	if r.peekNil() {
		return nil, nil
	}
	v := new(T)
	if err := one(r, v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeInto decodes len(out) elements into out, each with one.
func decodeInto[T any](r *mpReader, out []T, one func(*mpReader, *T) error) ([]T, error) {
	for i := range out {
		if err := one(r, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// as converts a string read as its named string type (an id, a code).
func as[S ~string](s string, err error) (S, error) { return S(s), err }
