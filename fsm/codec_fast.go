package fsm

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"sexton/api"
)

// Hand-written decoders for the hot entries (Remove, LocalDeleteAck,
// PutCommit): reflection costs about a microsecond per entry, which would
// be most of a one-key Remove, and every node decodes every entry. They accept exactly what the reflection decoder with
// DisallowUnknownFields accepts (FuzzDecodeCommand checks the two agree):
// one map, known field names only, a later duplicate field wins; a nil
// where a map is expected decodes as the zero struct.

// fieldDecoder is a msgpack decoder that reads field names without
// allocating them: a known name is read into name and answered as the
// interned string of fieldNames.
type fieldDecoder struct {
	*msgpack.Decoder
	name [16]byte
}

// fieldNames interns the field names the hand-written decoders know.
var fieldNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"v", "keys", "if_inc", "spans", "sess", "now", "n", "client", "seq", "floor",
		"seg", "epoch", "results", "id", "k", "i", "o", "h", "l",
		"key", "inc", "tenant", "size", "replicas", "put_id", "if_absent",
		"kind", "pool", "dfs", "alloc", "path", "unit", "off", "asize",
	} {
		m[n] = n
	}
	return m
}()

// fieldName reads a map key as DecodeString does (a nil is ""), without
// allocating a name fieldNames knows.
func (dec *fieldDecoder) fieldName() (string, error) {
	n, err := dec.DecodeBytesLen()
	if err != nil || n <= 0 {
		return "", err
	}
	if n > len(dec.name) {
		b := make([]byte, n)
		err := dec.ReadFull(b)
		return string(b), err
	}
	b := dec.name[:n]
	if err := dec.ReadFull(b); err != nil {
		return "", err
	}
	if s, ok := fieldNames[string(b)]; ok {
		return s, nil
	}
	return string(b), nil
}

// decodeMap walks one msgpack map, handing each field name to field, which
// decodes the value (or refuses an unknown name).
func decodeMap(dec *fieldDecoder, field func(name string) error) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name, err := dec.fieldName()
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
func decodeArray[T any](dec *fieldDecoder, limit int, what string, one func(*T) error) ([]T, error) {
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

// decodeBody decodes a command's body into c: field reads the body's own
// fields, decodeBody the leader's time ("now") every body has.
func decodeBody(dec *fieldDecoder, c Command, now *int64, field func(name string) error) (Command, error) {
	err := decodeMap(dec, func(name string) (err error) {
		if name == "now" {
			*now, err = dec.DecodeInt64()
			return err
		}
		return field(name)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func unknownField(name string) error { return fmt.Errorf("unknown field %q", name) }

func decodeRemoveFast(dec *fieldDecoder) (Command, error) {
	c := &Remove{}
	return decodeBody(dec, c, &c.Now, func(name string) (err error) {
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
		default:
			err = unknownField(name)
		}
		return err
	})
}

func decodeSpan(dec *fieldDecoder, s *RemoveSpan) error {
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

func decodeSession(dec *fieldDecoder, s *api.Session) error {
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

func decodeAckFast(dec *fieldDecoder) (Command, error) {
	c := &LocalDeleteAck{}
	return decodeBody(dec, c, &c.Now, func(name string) (err error) {
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
		default:
			err = unknownField(name)
		}
		return err
	})
}

func decodeTaskResult(dec *fieldDecoder, r *api.TaskResult) error {
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

func decodeIncarnation(dec *fieldDecoder, inc *api.ObjectIncarnation) error {
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

// decodePutCommitFast reads the one-commit put's entry, one per put.
func decodePutCommitFast(dec *fieldDecoder) (Command, error) {
	c := &PutCommit{}
	return decodeBody(dec, c, &c.Now, func(name string) (err error) {
		switch name {
		case "v":
			c.V, err = dec.DecodeUint8()
		case "key":
			c.Key, err = dec.DecodeString()
		case "inc":
			err = decodeIncarnation(dec, &c.Incarnation)
		case "tenant":
			c.Tenant, err = dec.DecodeString()
		case "size":
			c.Size, err = dec.DecodeInt64()
		case "replicas":
			c.Replicas, err = decodeArray(dec, api.MaxReplicas, "replicas", func(r *api.ReplicaDescriptor) error {
				return decodeReplica(dec, r)
			})
		case "put_id":
			c.PutID, err = dec.DecodeString()
		case "if_absent":
			c.IfAbsent, err = dec.DecodeBool()
		case "sess":
			err = decodeSession(dec, &c.Session)
		default:
			err = unknownField(name)
		}
		return err
	})
}

func decodeReplica(dec *fieldDecoder, r *api.ReplicaDescriptor) error {
	return decodeMap(dec, func(name string) (err error) {
		switch name {
		case "kind":
			var k uint8
			k, err = dec.DecodeUint8()
			r.Kind = api.ReplicaKind(k)
		case "seg":
			var s string
			s, err = dec.DecodeString()
			r.Segment = api.SegmentID(s)
		case "pool":
			r.Pool, err = dec.DecodeString()
		case "dfs":
			r.DFS, err = decodeDFS(dec)
		default:
			err = unknownField(name)
		}
		return err
	})
}

// decodeDFS reads a DFS descriptor; a nil is no descriptor.
func decodeDFS(dec *fieldDecoder) (*api.DFSDescriptor, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		return nil, dec.DecodeNil()
	}
	d := &api.DFSDescriptor{}
	return d, decodeMap(dec, func(name string) (err error) {
		switch name {
		case "alloc":
			d.Allocator, err = dec.DecodeString()
		case "path":
			d.Path, err = dec.DecodeString()
		case "unit":
			d.UnitID, err = dec.DecodeUint64()
		case "off":
			d.Offset, err = dec.DecodeInt64()
		case "size":
			d.Size, err = dec.DecodeInt64()
		case "asize":
			d.AlignedSize, err = dec.DecodeInt64()
		default:
			err = unknownField(name)
		}
		return err
	})
}

// Hand-written encoders, for the entry the leader proposes once per put
// (PutCommit). Each writes exactly the bytes reflection writes (the same
// field order, omitempty rules and integer widths; TestFastEncodersMatch
// compares them).

// fieldEncoder keeps the first error of a run of writes.
type fieldEncoder struct {
	enc *msgpack.Encoder
	err error
}

func (e *fieldEncoder) do(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *fieldEncoder) mapLen(n int) { e.do(e.enc.EncodeMapLen(n)) }
func (e *fieldEncoder) str(name, v string) {
	e.do(e.enc.EncodeString(name))
	e.do(e.enc.EncodeString(v))
}
func (e *fieldEncoder) u8(name string, v uint8) {
	e.do(e.enc.EncodeString(name))
	e.do(e.enc.EncodeUint8(v))
}
func (e *fieldEncoder) u64(name string, v uint64) {
	e.do(e.enc.EncodeString(name))
	e.do(e.enc.EncodeUint64(v))
}
func (e *fieldEncoder) i64(name string, v int64) {
	e.do(e.enc.EncodeString(name))
	e.do(e.enc.EncodeInt64(v))
}

func encodePutCommitFast(enc *msgpack.Encoder, cmd Command) error {
	c := cmd.(*PutCommit)
	e := fieldEncoder{enc: enc}
	n := 9
	if !c.Session.IsZero() {
		n++
	}
	e.mapLen(n)
	e.u8("v", c.V)
	e.str("key", c.Key)
	e.do(enc.EncodeString("inc"))
	e.incarnation(c.Incarnation)
	e.str("tenant", c.Tenant)
	e.i64("size", c.Size)
	e.do(enc.EncodeString("replicas"))
	if c.Replicas == nil {
		e.do(enc.EncodeNil())
	} else {
		e.do(enc.EncodeArrayLen(len(c.Replicas)))
		for i := range c.Replicas {
			e.replica(&c.Replicas[i])
		}
	}
	e.str("put_id", c.PutID)
	e.do(enc.EncodeString("if_absent"))
	e.do(enc.EncodeBool(c.IfAbsent))
	if !c.Session.IsZero() {
		e.do(enc.EncodeString("sess"))
		e.session(c.Session)
	}
	e.i64("now", c.Now)
	return e.err
}

func (e *fieldEncoder) incarnation(inc api.ObjectIncarnation) {
	e.mapLen(2)
	e.u64("h", inc.High)
	e.u64("l", inc.Low)
}

func (e *fieldEncoder) session(s api.Session) {
	e.mapLen(countSet(s.ClientID != "", s.Seq != 0, s.Floor != 0))
	if s.ClientID != "" {
		e.str("client", s.ClientID)
	}
	if s.Seq != 0 {
		e.u64("seq", s.Seq)
	}
	if s.Floor != 0 {
		e.u64("floor", s.Floor)
	}
}

func (e *fieldEncoder) replica(r *api.ReplicaDescriptor) {
	e.mapLen(1 + countSet(r.Segment != "", r.Pool != "", r.DFS != nil))
	e.u8("kind", uint8(r.Kind))
	if r.Segment != "" {
		e.str("seg", string(r.Segment))
	}
	if r.Pool != "" {
		e.str("pool", r.Pool)
	}
	if d := r.DFS; d != nil {
		e.do(e.enc.EncodeString("dfs"))
		e.mapLen(6)
		e.str("alloc", d.Allocator)
		e.str("path", d.Path)
		e.u64("unit", d.UnitID)
		e.i64("off", d.Offset)
		e.i64("size", d.Size)
		e.i64("asize", d.AlignedSize)
	}
}

// countSet counts the true conditions: the fields an omitempty map
// writes.
func countSet(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}
