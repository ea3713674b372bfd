package transport

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// readUint reads every msgpack integer encoding of a non-negative value,
// refuses a negative value of each signed width, and fails closed on a
// truncated one.
func TestReadUintEncodings(t *testing.T) {
	ff := func(n int) []byte { return []byte(strings.Repeat("\xff", n)) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for _, c := range []struct {
		b    []byte
		want uint64
		err  string
	}{
		{b: []byte{0x7f}, want: 0x7f},
		{b: cat([]byte{0xcc}, ff(1)), want: math.MaxUint8},
		{b: cat([]byte{0xcd}, ff(2)), want: math.MaxUint16},
		{b: cat([]byte{0xce}, ff(4)), want: math.MaxUint32},
		{b: cat([]byte{0xcf}, ff(8)), want: math.MaxUint64},
		{b: []byte{0xd0, 0x7f}, want: math.MaxInt8},
		{b: cat([]byte{0xd1, 0x7f}, ff(1)), want: math.MaxInt16},
		{b: cat([]byte{0xd2, 0x7f}, ff(3)), want: math.MaxInt32},
		{b: cat([]byte{0xd3, 0x7f}, ff(7)), want: math.MaxInt64},
		{b: []byte{0xd0, 0x80}, err: "negative"},
		{b: []byte{0xd1, 0x80, 0x00}, err: "negative"},
		{b: cat([]byte{0xd2}, ff(4)), err: "negative"},
		{b: []byte{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, err: "negative"},
		{b: []byte{0xcd, 0xff}, err: errTruncated.Error()},
		{b: []byte{0xa1, 'x'}, err: "found msgpack code 0xa1"},
	} {
		got, end, err := readUint(c.b, 0)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("% x: %d, %v; want an error with %q", c.b, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want || end != len(c.b) {
			t.Errorf("% x: %d, end %d, %v; want %d, end %d", c.b, got, end, err, c.want, len(c.b))
		}
	}
	if _, _, err := readLen([]byte{0x01}, 0, 2); !errors.Is(err, errTruncated) {
		t.Errorf("readLen of a short length: %v", err)
	}
	if n, end, err := readLen([]byte{0, 0x01, 0x02, 0x03, 0x04}, 1, 4); err != nil || n != 0x01020304 || end != 5 {
		t.Errorf("readLen of a 4-byte length: %d, %d, %v", n, end, err)
	}
}
