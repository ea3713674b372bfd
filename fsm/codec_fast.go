package fsm

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
)

// Hand-written decoders for the two hot entries (Remove, LocalDeleteAck):
// reflection costs about a microsecond per entry, which would be most of a
// one-key Remove. They accept exactly what the reflection decoder with
// DisallowUnknownFields accepts (FuzzDecodeCommand checks the two agree):
// one map, known field names only, a later duplicate field wins; a nil
// where a map is expected decodes as the zero struct.

// decodeMap walks one msgpack map, handing each field name to field, which
// decodes the value (or refuses an unknown name).
func decodeMap(dec *msgpack.Decoder, field func(name string) error) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return err
		}
		if err := field(name); err != nil {
			return err
		}
	}
	return nil
}

// decodeArray reads an array of at most limit elements, one at a time.
func decodeArray[T any](dec *msgpack.Decoder, limit int, what string, one func(*T) error) ([]T, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%d %s exceed %d", n, what, limit)
	}
	out := make([]T, n)
	for i := range out {
		if err := one(&out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func unknownField(name string) error { return fmt.Errorf("unknown field %q", name) }

func decodeRemoveFast(dec *msgpack.Decoder) (Command, error) {
	c := &Remove{}
	err := decodeMap(dec, func(name string) (err error) {
		switch name {
		case "v":
			c.V, err = dec.DecodeUint8()
		case "keys":
			c.Keys, err = decodeArray(dec, api.MaxBatchKeys, "strings", func(s *string) (err error) {
				*s, err = dec.DecodeString()
				return err
			})
		case "if_inc":
			c.IfInc, err = decodeArray(dec, api.MaxBatchKeys, "incarnations", func(inc *api.ObjectIncarnation) error {
				return decodeIncarnation(dec, inc)
			})
		case "spans":
			c.Spans, err = decodeArray(dec, api.MaxBatchKeys, "spans", func(s *RemoveSpan) error {
				return decodeSpan(dec, s)
			})
		case "sess":
			err = decodeSession(dec, &c.Session)
		case "now":
			c.Now, err = dec.DecodeInt64()
		default:
			err = unknownField(name)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func decodeSpan(dec *msgpack.Decoder, s *RemoveSpan) error {
	return decodeMap(dec, func(name string) (err error) {
		switch name {
		case "sess":
			err = decodeSession(dec, &s.Session)
		case "n":
			s.N, err = dec.DecodeInt()
		default:
			err = unknownField(name)
		}
		return err
	})
}

func decodeSession(dec *msgpack.Decoder, s *api.Session) error {
	return decodeMap(dec, func(name string) (err error) {
		switch name {
		case "client":
			s.ClientID, err = dec.DecodeString()
		case "seq":
			s.Seq, err = dec.DecodeUint64()
		case "floor":
			s.Floor, err = dec.DecodeUint64()
		default:
			err = unknownField(name)
		}
		return err
	})
}

func decodeAckFast(dec *msgpack.Decoder) (Command, error) {
	c := &LocalDeleteAck{}
	err := decodeMap(dec, func(name string) (err error) {
		switch name {
		case "v":
			c.V, err = dec.DecodeUint8()
		case "seg":
			var s string
			s, err = dec.DecodeString()
			c.Segment = api.SegmentID(s)
		case "epoch":
			c.Epoch, err = dec.DecodeUint64()
		case "results":
			c.Results, err = decodeArray(dec, MaxAckResults, "results", func(r *api.TaskResult) error {
				return decodeTaskResult(dec, r)
			})
		case "now":
			c.Now, err = dec.DecodeInt64()
		default:
			err = unknownField(name)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func decodeTaskResult(dec *msgpack.Decoder, r *api.TaskResult) error {
	return decodeMap(dec, func(name string) (err error) {
		switch name {
		case "id":
			r.TaskID, err = dec.DecodeUint64()
		case "k":
			r.Key, err = dec.DecodeString()
		case "i":
			err = decodeIncarnation(dec, &r.Incarnation)
		case "o":
			var o uint8
			o, err = dec.DecodeUint8()
			r.Outcome = api.AckOutcome(o)
		default:
			err = unknownField(name)
		}
		return err
	})
}

func decodeIncarnation(dec *msgpack.Decoder, inc *api.ObjectIncarnation) error {
	return decodeMap(dec, func(name string) (err error) {
		switch name {
		case "h":
			inc.High, err = dec.DecodeUint64()
		case "l":
			inc.Low, err = dec.DecodeUint64()
		default:
			err = unknownField(name)
		}
		return err
	})
}
