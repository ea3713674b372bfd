package client

import (
	"cmp"
	"context"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// ByteRange is a part of a value read into the caller's memory: the
// len(Buf) bytes of the value from Offset.
type ByteRange struct {
	Offset int64
	Buf    []byte
}

// GetIntoRanges reads byte ranges of the key's newest value into the
// caller's slices: each range's Buf gets the value's len(Buf) bytes from
// its Offset. A value put from several slices (PutFrom) is read back into
// such slices with ranges at consecutive offsets; Mooncake's
// get_into_ranges reads fragments this way.
//
// The holder's answer is decoded straight into the ranges from the frame
// the transport received (the bytes no range wants are skipped, never
// copied), so no value-sized slice is allocated beyond that frame; ranges
// may overlap. A range outside the value (a negative offset, or past its
// end) fails with INVALID_PARAMS, reading nothing; the returned info then
// has the value's size. As Get, it asks the master again when the replicas
// lost the incarnation it named.
func (c *Client) GetIntoRanges(ctx context.Context, key string, ranges []ByteRange) (api.ObjectInfo, error) {
	if ranges == nil {
		ranges = []ByteRange{}
	}
	return c.getOne(ctx, key, func(obj api.ObjectInfo) (bool, error) {
		for i, r := range ranges {
			if r.Offset < 0 || r.Offset+int64(len(r.Buf)) > obj.Size {
				return false, api.Errorf(api.CodeInvalidParams, "%s (%s) is %d bytes: range %d (%d bytes from %d) is outside it",
					key, obj.Incarnation, obj.Size, i, len(r.Buf), r.Offset)
			}
		}
		_, gone, err := c.readReplicasInto(ctx, obj, nil, ranges)
		return gone, err
	})
}

// byOffset is ranges' indexes in order of offset.
func byOffset(ranges []ByteRange) []int {
	order := make([]int, len(ranges))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ranges[a].Offset, ranges[b].Offset) })
	return order
}

// copyRanges fills each range from value (which holds them all).
func copyRanges(ranges []ByteRange, value []byte) {
	for _, r := range ranges {
		copy(r.Buf, value[r.Offset:])
	}
}

// rangesAnswer decodes a HolderRead answer ({"value": bin}) keeping only
// the bytes ranges want: the value is streamed through in order of
// offset, each range read in place, the bytes between ranges skipped, and
// a range overlapping an earlier one takes the overlap from it. n is the
// length of the value answered; a length other than size stops the decode
// before any byte is kept.
type rangesAnswer struct {
	ranges []ByteRange
	size   int64
	n      int64
}

// skipChunk bounds the scratch slice bytes no range wants are read into.
const skipChunk = 32 << 10

func (a *rangesAnswer) DecodeMsgpack(dec *msgpack.Decoder) error {
	fields, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for f := 0; f < fields; f++ {
		name, err := dec.DecodeString()
		if err != nil {
			return err
		}
		if name != "value" {
			if err := dec.Skip(); err != nil {
				return err
			}
			continue
		}
		n, err := dec.DecodeBytesLen()
		if err != nil {
			return err
		}
		a.n = int64(max(n, 0))
		if a.n != a.size {
			return dec.Skip() // the caller refuses the length; nothing is kept
		}
		if err := a.stream(dec); err != nil {
			return err
		}
	}
	return nil
}

// stream reads the value's a.size bytes from dec into the ranges.
func (a *rangesAnswer) stream(dec *msgpack.Decoder) error {
	var scratch []byte
	skip := func(n int64) error {
		for n > 0 {
			if scratch == nil {
				scratch = make([]byte, min(n, skipChunk))
			}
			k := min(n, int64(len(scratch)))
			if err := dec.ReadFull(scratch[:k]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
	var pos int64      // bytes of the value read so far
	var cover int = -1 // the range read last, which holds the bytes just before pos
	for _, i := range byOffset(a.ranges) {
		r := a.ranges[i]
		end := r.Offset + int64(len(r.Buf))
		done := int64(0)
		if r.Offset < pos {
			c := a.ranges[cover]
			done = int64(copy(r.Buf[:min(pos, end)-r.Offset], c.Buf[r.Offset-c.Offset:]))
		} else {
			if err := skip(r.Offset - pos); err != nil {
				return err
			}
			pos = r.Offset
		}
		if end > r.Offset+done {
			if err := dec.ReadFull(r.Buf[done:]); err != nil {
				return err
			}
			pos, cover = end, i
		}
	}
	return skip(a.size - pos)
}
