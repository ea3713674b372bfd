package holder

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/internal/msgpackscan"
)

// decodeWriteRequest decodes a HolderWrite body with the value aliasing
// the body (the frame buffer) instead of copied out of it: for a large
// put, that copy and its zeroed 16 MiB allocation were the holder's only
// user-space pass over the value besides the CRC. Every field but value
// is decoded by the ordinary strict decoder from a copy of the map with
// value left out (a few hundred bytes), so unknown fields are refused as
// for every other method. A value that is not msgpack bin (or nil) is
// decoded the ordinary way. The returned Value is valid only while the
// handler runs, which is as long as Store.Put holds it.
func decodeWriteRequest(body []byte) (*api.HolderWriteRequest, error) {
	bad := func(format string, args ...any) error {
		return api.Errorf(api.CodeInvalidParams, "decode %s request: %s", api.MethodHolderWrite, fmt.Sprintf(format, args...))
	}
	if err := msgpackscan.Check(body, msgpackscan.Limits{}); err != nil {
		return nil, bad("%v", err)
	}
	n, off, err := mapHeader(body)
	if err != nil {
		return nil, bad("%v", err)
	}
	rest := make([]byte, 0, 64)
	kept := 0
	var value []byte
	found := false
	for range n {
		kl, err := msgpackscan.Walk(body[off:], msgpackscan.Limits{})
		if err != nil {
			return nil, bad("%v", err)
		}
		vl, err := msgpackscan.Walk(body[off+kl:], msgpackscan.Limits{})
		if err != nil {
			return nil, bad("%v", err)
		}
		var name string
		if err := msgpack.Unmarshal(body[off:off+kl], &name); err == nil && name == "value" {
			if v, ok := binValue(body[off+kl : off+kl+vl]); ok {
				value, found = v, true
				off += kl + vl
				continue
			}
		}
		rest = append(rest, body[off:off+kl+vl]...)
		kept++
		off += kl + vl
	}
	var hdr []byte
	switch {
	case kept < 16:
		hdr = []byte{0x80 | byte(kept)}
	default:
		hdr = binary.BigEndian.AppendUint32([]byte{0xdf}, uint32(kept))
	}
	req := new(api.HolderWriteRequest)
	dec := msgpack.NewDecoder(bytes.NewReader(append(hdr, rest...)))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(req); err != nil {
		return nil, bad("%v", err)
	}
	if found {
		req.Value = value
	}
	return req, nil
}

// mapHeader reads a msgpack map header: the entry count and where the
// first entry starts.
func mapHeader(b []byte) (int, int, error) {
	switch c := b[0]; {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), 1, nil
	case c == 0xde && len(b) >= 3:
		return int(binary.BigEndian.Uint16(b[1:3])), 3, nil
	case c == 0xdf && len(b) >= 5:
		return int(binary.BigEndian.Uint32(b[1:5])), 5, nil
	}
	return 0, 0, fmt.Errorf("the body is not a map (first byte %#x)", b[0])
}

// binValue returns the bytes of a msgpack bin (or nil) value v, aliasing v.
func binValue(v []byte) ([]byte, bool) {
	switch v[0] {
	case 0xc0:
		return nil, true
	case 0xc4:
		return v[2:], true
	case 0xc5:
		return v[3:], true
	case 0xc6:
		return v[5:], true
	}
	return nil, false
}
