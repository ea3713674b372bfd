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
// one map, known field names only, a later duplicate field wins.

func decodeRemoveFast(dec *msgpack.Decoder) (Command, error) {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	c := &Remove{}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return nil, err
		}
		switch name {
		case "v":
			c.V, err = dec.DecodeUint8()
		case "keys":
			c.Keys, err = decodeStrings(dec)
		case "if_inc":
			c.IfInc, err = decodeIncarnations(dec)
		case "spans":
			c.Spans, err = decodeSpans(dec)
		case "sess":
			err = decodeSession(dec, &c.Session)
		case "now":
			c.Now, err = dec.DecodeInt64()
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func decodeStrings(dec *msgpack.Decoder) ([]string, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > api.MaxBatchKeys {
		return nil, fmt.Errorf("%d strings exceed %d", n, api.MaxBatchKeys)
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = dec.DecodeString(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeIncarnations(dec *msgpack.Decoder) ([]api.ObjectIncarnation, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > api.MaxBatchKeys {
		return nil, fmt.Errorf("%d incarnations exceed %d", n, api.MaxBatchKeys)
	}
	out := make([]api.ObjectIncarnation, n)
	for i := range out {
		if err := decodeIncarnation(dec, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeSpans(dec *msgpack.Decoder) ([]RemoveSpan, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > api.MaxBatchKeys {
		return nil, fmt.Errorf("%d spans exceed %d", n, api.MaxBatchKeys)
	}
	out := make([]RemoveSpan, n)
	for i := range out {
		if err := decodeSpan(dec, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeSpan(dec *msgpack.Decoder, s *RemoveSpan) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch name {
		case "sess":
			err = decodeSession(dec, &s.Session)
		case "n":
			s.N, err = dec.DecodeInt()
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeSession(dec *msgpack.Decoder, s *api.Session) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch name {
		case "client":
			s.ClientID, err = dec.DecodeString()
		case "seq":
			s.Seq, err = dec.DecodeUint64()
		case "floor":
			s.Floor, err = dec.DecodeUint64()
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeAckFast(dec *msgpack.Decoder) (Command, error) {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	c := &LocalDeleteAck{}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return nil, err
		}
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
			c.Results, err = decodeTaskResults(dec)
		case "now":
			c.Now, err = dec.DecodeInt64()
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func decodeTaskResults(dec *msgpack.Decoder) ([]api.TaskResult, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > MaxAckResults {
		return nil, fmt.Errorf("%d results exceed %d", n, MaxAckResults)
	}
	out := make([]api.TaskResult, n)
	for i := range out {
		if err := decodeTaskResult(dec, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeTaskResult(dec *msgpack.Decoder, r *api.TaskResult) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return nil // nil decodes as the zero struct, as reflection does
	}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return err
		}
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
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeIncarnation(dec *msgpack.Decoder, inc *api.ObjectIncarnation) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return nil
	}
	for i := 0; i < n; i++ {
		name, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch name {
		case "h":
			inc.High, err = dec.DecodeUint64()
		case "l":
			inc.Low, err = dec.DecodeUint64()
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
