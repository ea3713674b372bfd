package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// Every array a record holds is read up to its bound and refused, before
// its elements are read, one element past it.
func TestArraysReadUpToTheirBound(t *testing.T) {
	replica := map[string]any{"kind": uint8(api.ReplicaLocalDisk), "seg": "s1", "pool": "p"}
	for _, c := range []struct {
		name   string
		max    int
		elem   any
		decode func(*mpReader) (int, error)
		says   string
	}{
		{"replicas", api.MaxReplicas, replica, func(r *mpReader) (int, error) {
			v, err := decodeReplicas(r, nil)
			return len(v), err
		}, "object has"},
		{"replicas into a spare", api.MaxReplicas, replica, func(r *mpReader) (int, error) {
			v, err := decodeReplicas(r, new([1]api.ReplicaDescriptor))
			return len(v), err
		}, "object has"},
		{"1.0.0 replicas", api.MaxReplicas, map[string]any{"seg": "s1", "pool": "p"}, func(r *mpReader) (int, error) {
			v, err := decodeReplicas100(r)
			return len(v), err
		}, "object has"},
		{"capabilities", api.MaxCapabilities, "cap", func(r *mpReader) (int, error) {
			v, err := decodeCapabilities(r)
			return len(v), err
		}, "segment has"},
		{"session items", maxSessionItems, map[string]any{"i": 1, "tasks": 2}, func(r *mpReader) (int, error) {
			v, err := decodeSessionItems(r)
			return len(v), err
		}, "session result has"},
		{"incarnation blocks", MaxIncBlocks, map[string]any{"lo": 1, "hi": 2, "exp": 3}, func(r *mpReader) (int, error) {
			v, err := decodeIncBlocks(r)
			return len(v), err
		}, "state has"},
		{"audit", maxAuditEntries, map[string]any{"index": 1, "by": "op"}, func(r *mpReader) (int, error) {
			v, err := decodeAudit(r)
			return len(v), err
		}, "state has"},
	} {
		for _, n := range []int{0, 1, c.max, c.max + 1} {
			elems := make([]any, n)
			for i := range elems {
				elems[i] = c.elem
			}
			data, err := msgpack.Marshal(elems)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.decode(&mpReader{b: data})
			switch {
			case n <= c.max && (err != nil || got != n):
				t.Errorf("%s: %d elements read as %d, %v", c.name, n, got, err)
			case n > c.max && (!errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("%s %d ", c.says, n))):
				t.Errorf("%s: %d elements, over the bound %d: %v, want ErrTooLarge saying %q", c.name, n, c.max, err, c.says)
			}
		}
	}
}

// Every msgpack integer encoding reads as its value, unsigned where it is
// not negative and signed where it fits an int64; any other is refused.
func TestIntegersReadInEveryEncoding(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		u    uint64
		uOK  bool
		i    int64
		iOK  bool
	}{
		{"positive fixint", []byte{0x05}, 5, true, 5, true},
		{"negative fixint", []byte{0xff}, 0, false, -1, true},
		{"uint8", []byte{0xcc, 0xc8}, 200, true, 200, true},
		{"uint16", []byte{0xcd, 0x01, 0x00}, 256, true, 256, true},
		{"uint64 above int64", []byte{0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0}, 1 << 63, true, 0, false},
		{"int8 negative", []byte{0xd0, 0x80}, 0, false, -128, true},
		{"int16 positive", []byte{0xd1, 0x01, 0x00}, 256, true, 256, true},
		{"int64 negative", []byte{0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, 0, false, -2, true},
		{"a string", []byte{0xa1, 'x'}, 0, false, 0, false},
		{"short", []byte{0xcd, 0x01}, 0, false, 0, false},
	} {
		u, err := (&mpReader{b: c.data}).uint("v")
		if (err == nil) != c.uOK || u != c.u {
			t.Errorf("%s: uint = %d, %v", c.name, u, err)
		}
		i, err := (&mpReader{b: c.data}).int("v")
		if (err == nil) != c.iOK || i != c.i {
			t.Errorf("%s: int = %d, %v", c.name, i, err)
		}
	}
}
