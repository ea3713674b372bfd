package msgpackscan

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestWalkAcceptsWhatTheEncoderWrites(t *testing.T) {
	v := map[string]any{"a": []any{1, "x", nil, true, 3.5, []byte{1, 2}, map[string]any{"n": -7}}, "b": uint64(1) << 40}
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(b, Limits{}); err != nil {
		t.Fatal(err)
	}
	if n, err := Walk(append(b, 0xc0), Limits{}); err != nil || n != len(b) {
		t.Fatalf("Walk = %d, %v; want %d", n, err, len(b))
	}
	if err := Check(append(b, 0xc0), Limits{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("trailing byte accepted: %v", err)
	}
}

// Claims beyond the bytes present, beyond MaxItems or deeper than MaxDepth
// are refused, and so is every truncation.
func TestWalkRefusesClaims(t *testing.T) {
	cases := map[string]struct {
		b   []byte
		lim Limits
	}{
		"array32 of 2^28":        {[]byte{0xdd, 0x10, 0, 0, 0, 1, 2}, Limits{}},
		"map16 beyond the bytes": {[]byte{0xde, 0, 3, 1, 2, 3, 4}, Limits{}},
		"str32 beyond the bytes": {[]byte{0xdb, 0, 0, 1, 0, 'x'}, Limits{}},
		"over MaxItems":          {[]byte{0x93, 1, 2, 3}, Limits{MaxItems: 2}},
		"deeper than MaxDepth":   {append(bytes.Repeat([]byte{0x91}, MaxDepth+1), 0xc0), Limits{}},
		"invalid code":           {[]byte{0xc1}, Limits{}},
		"empty":                  {nil, Limits{}},
	}
	for name, c := range cases {
		if err := Check(c.b, c.lim); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if err := Check(append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0), Limits{}); err != nil {
		t.Errorf("nesting of exactly MaxDepth refused: %v", err)
	}
	good, _ := msgpack.Marshal(map[string]any{"k": []any{"abc", 1, 2}})
	for i := 0; i < len(good); i++ {
		if err := Check(good[:i], Limits{}); err == nil {
			t.Errorf("truncation to %d bytes accepted", i)
		}
	}
}

func FuzzWalk(f *testing.F) {
	f.Add([]byte{0x81, 0xa1, 'k', 0x92, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Walk(b, Limits{MaxItems: 1 << 10})
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("Walk = %d for %d bytes", n, len(b))
		}
		// What the walk accepts, the decoder may read (it fails or not,
		// but never panics nor allocates past the bound).
		var v any
		_ = msgpack.Unmarshal(b[:n], &v)
	})
}
