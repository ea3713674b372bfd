// Package holderwire encodes a HolderWrite request so that its value goes
// to the connection from the caller's slice, or slices, instead of through
// a msgpack encode buffer (transport.TailBody, transport.TailPartsBody).
package holderwire

import (
	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// Body is a HolderWrite request body encoded with its value last and sent
// as the frame's tail. The fields before the value (key, tenant,
// incarnation, grant) are what a holder checks before it stores a byte,
// so they come first; msgpack maps are order-free, so a holder that
// decodes the whole body with the generic decoder reads it unchanged.
// With Parts set, the value is Parts one after the other (Req.Value is
// then ignored), sent from each slice without joining them.
type Body struct {
	Req   *api.HolderWriteRequest
	Parts [][]byte
}

// EncodeMsgpackHead writes every field but the value's bytes: the map
// header, the key, tenant, incarnation and grant, then "value" and its bin
// header. It returns the value, which the transport writes after the head.
func (b Body) EncodeMsgpackHead(enc *msgpack.Encoder) ([]byte, error) {
	if b.Req.Value == nil {
		return nil, b.head(enc, -1)
	}
	return b.Req.Value, b.head(enc, len(b.Req.Value))
}

// EncodeMsgpackHeadParts is EncodeMsgpackHead returning the value's parts:
// Parts when set, else Req.Value alone.
func (b Body) EncodeMsgpackHeadParts(enc *msgpack.Encoder) ([][]byte, error) {
	if b.Parts == nil {
		v, err := b.EncodeMsgpackHead(enc)
		return [][]byte{v}, err
	}
	n := 0
	for _, p := range b.Parts {
		n += len(p)
	}
	return b.Parts, b.head(enc, n)
}

// head writes the body up to the value's bin header for a value of n
// bytes (n < 0: a nil value).
func (b Body) head(enc *msgpack.Encoder, n int) error {
	r := b.Req
	fields := 3 // key, inc, value
	if r.Tenant != "" {
		fields++
	}
	if r.Grant != nil {
		fields++
	}
	if err := enc.EncodeMapLen(fields); err != nil {
		return err
	}
	field := func(name string, v any) error {
		if err := enc.EncodeString(name); err != nil {
			return err
		}
		return enc.Encode(v)
	}
	if err := field("key", r.Key); err != nil {
		return err
	}
	if r.Tenant != "" {
		if err := field("tenant", r.Tenant); err != nil {
			return err
		}
	}
	if err := field("inc", &r.Incarnation); err != nil {
		return err
	}
	if r.Grant != nil {
		if err := field("grant", r.Grant); err != nil {
			return err
		}
	}
	if err := enc.EncodeString("value"); err != nil {
		return err
	}
	if n < 0 {
		return enc.EncodeNil()
	}
	return enc.EncodeBytesLen(n)
}
