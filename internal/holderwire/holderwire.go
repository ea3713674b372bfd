// Package holderwire encodes a HolderWrite request so that its value goes
// to the connection from the caller's slice instead of through a msgpack
// encode buffer (transport.TailBody).
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
type Body struct{ Req *api.HolderWriteRequest }

// EncodeMsgpackHead writes every field but the value's bytes: the map
// header, the key, tenant, incarnation and grant, then "value" and its bin
// header. It returns the value, which the transport writes after the head.
func (b Body) EncodeMsgpackHead(enc *msgpack.Encoder) ([]byte, error) {
	r := b.Req
	n := 3 // key, inc, value
	if r.Tenant != "" {
		n++
	}
	if r.Grant != nil {
		n++
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return nil, err
	}
	field := func(name string, v any) error {
		if err := enc.EncodeString(name); err != nil {
			return err
		}
		return enc.Encode(v)
	}
	if err := field("key", r.Key); err != nil {
		return nil, err
	}
	if r.Tenant != "" {
		if err := field("tenant", r.Tenant); err != nil {
			return nil, err
		}
	}
	if err := field("inc", &r.Incarnation); err != nil {
		return nil, err
	}
	if r.Grant != nil {
		if err := field("grant", r.Grant); err != nil {
			return nil, err
		}
	}
	if err := enc.EncodeString("value"); err != nil {
		return nil, err
	}
	if r.Value == nil {
		return nil, enc.EncodeNil()
	}
	return r.Value, enc.EncodeBytesLen(len(r.Value))
}
