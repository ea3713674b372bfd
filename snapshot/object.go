package snapshot

import (
	"bytes"
	"fmt"

	"sexton/api"
)

// The metadata section of a large cluster holds a million Object records,
// so Objects (with their incarnations and replica descriptors) have a
// hand-written codec. The bytes are exactly msgpack's reflection encoding of
// the struct: a map of its msgpack-tagged fields in declaration order,
// omitempty fields left out when empty.

// appendObject appends o's msgpack encoding to b.
func appendObject(b []byte, o *Object) []byte {
	b = append(b, 0x88) // map of 8 fields
	b = appendStr(b, "key")
	b = appendStr(b, o.Key)
	b = appendStr(b, "tenant")
	b = appendStr(b, o.Tenant)
	b = appendStr(b, "size")
	b = appendInt(b, o.Size)
	b = appendStr(b, "inc")
	b = appendIncarnation(b, o.Incarnation)
	b = appendStr(b, "state")
	b = appendUint(b, uint64(o.State))
	b = appendStr(b, "created")
	b = appendInt(b, o.Created)
	b = appendStr(b, "put_id")
	b = appendStr(b, o.PutID)
	b = appendStr(b, "replicas")
	if o.Replicas == nil {
		return append(b, 0xc0)
	}
	b = appendArrayLen(b, len(o.Replicas))
	for i := range o.Replicas {
		b = appendReplica(b, &o.Replicas[i])
	}
	return b
}

func appendIncarnation(b []byte, inc api.ObjectIncarnation) []byte {
	b = append(b, 0x82)
	b = appendStr(b, "h")
	b = appendUint(b, inc.High)
	b = appendStr(b, "l")
	return appendUint(b, inc.Low)
}

func appendReplica(b []byte, r *api.ReplicaDescriptor) []byte {
	n := 1
	if r.Segment != "" {
		n++
	}
	if r.Pool != "" {
		n++
	}
	if r.DFS != nil {
		n++
	}
	b = appendMapLen(b, n)
	b = appendStr(b, "kind")
	b = appendUint(b, uint64(r.Kind))
	if r.Segment != "" {
		b = appendStr(b, "seg")
		b = appendStr(b, string(r.Segment))
	}
	if r.Pool != "" {
		b = appendStr(b, "pool")
		b = appendStr(b, r.Pool)
	}
	if r.DFS != nil {
		d := r.DFS
		b = appendStr(b, "dfs")
		b = append(b, 0x86)
		b = appendStr(b, "alloc")
		b = appendStr(b, d.Allocator)
		b = appendStr(b, "path")
		b = appendStr(b, d.Path)
		b = appendStr(b, "unit")
		b = appendUint(b, d.UnitID)
		b = appendStr(b, "off")
		b = appendInt(b, d.Offset)
		b = appendStr(b, "size")
		b = appendInt(b, d.Size)
		b = appendStr(b, "asize")
		b = appendInt(b, d.AlignedSize)
	}
	return b
}

// maxRecordFields bounds the fields of one record map: every record type
// has fewer, so a map claiming more is corrupt (it must repeat a field or
// carry unknown ones).
const maxRecordFields = 16

// eachField walks one record map strictly: it refuses a nil record and a
// field given twice (msgpack would silently keep the last, hiding a corrupt
// writer), and hands each field name to field, which decodes the value or
// returns errUnknownField. The names point into the chunk, so remembering
// them for the duplicate check allocates nothing.
func (r *mpReader) eachField(record string, field func(name []byte) error) error {
	n, err := r.recordMap(record)
	if err != nil {
		return err
	}
	if n > maxRecordFields {
		return fmt.Errorf("%w: %s: %d fields, more than any record has", ErrCorrupt, record, n)
	}
	var seen [maxRecordFields][]byte
	for i := 0; i < n; i++ {
		// A constant label: concatenating the record's name here would
		// allocate once per field of every record read.
		name, err := r.strBytes("field name")
		if err != nil {
			return fmt.Errorf("%s: %w", record, err)
		}
		for _, prev := range seen[:i] {
			if bytes.Equal(prev, name) {
				return fmt.Errorf("%w: %s: field %q appears twice", ErrCorrupt, record, name)
			}
		}
		seen[i] = name
		if err := field(name); err != nil {
			return err
		}
	}
	return nil
}

func errUnknownField(record string, name []byte) error {
	return fmt.Errorf("%w: %s: unknown field %q", ErrCorrupt, record, name)
}

func (r *mpReader) recordMap(record string) (int, error) {
	n, err := r.mapLen(record)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %s: nil record", ErrCorrupt, record)
	}
	return n, nil
}

// decodeObject decodes one Object record, strictly: unknown or repeated
// fields are refused.
//
// spare, if not nil, is used instead of allocating when the object has
// exactly one replica, the common case: the caller allocates the object and
// its replica together.
//
// A 1.0.0 object has fewer fields and other replicas, and is converted:
// incarnation zero (the legacy incarnation), COMPLETE (1.0.0 stored only
// completed puts), every replica LOCAL_DISK, no put id.
func decodeObject(r *mpReader, o *Object, spare *[1]api.ReplicaDescriptor, format string) error {
	rec, v100 := "object", format == Format100
	if v100 {
		rec = "object (1.0.0)"
		*o = Object{State: ObjectComplete}
	}
	return r.eachField(rec, func(name []byte) (err error) {
		if v100 && !objectFields100[string(name)] {
			return errUnknownField(rec, name)
		}
		switch string(name) {
		case "key":
			o.Key, err = r.str("object key", api.MaxKeyLen)
		case "tenant":
			o.Tenant, err = r.strShared("object tenant", api.MaxTenantLen)
		case "size":
			o.Size, err = r.int("object size")
		case "inc":
			err = decodeIncarnation(r, &o.Incarnation)
		case "state":
			var s uint8
			s, err = r.uint8("object state")
			o.State = ObjectState(s)
		case "created":
			o.Created, err = r.int("object created")
		case "put_id":
			o.PutID, err = r.str("object put_id", api.MaxIDLen)
		case "replicas":
			if v100 {
				o.Replicas, err = decodeReplicas100(r)
			} else {
				o.Replicas, err = decodeReplicas(r, spare)
			}
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeIncarnation(r *mpReader, inc *api.ObjectIncarnation) error {
	const rec = "incarnation"
	if r.peekNil() {
		*inc = api.ObjectIncarnation{}
		return nil
	}
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "h":
			inc.High, err = r.uint("incarnation high")
		case "l":
			inc.Low, err = r.uint("incarnation low")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeReplicas(r *mpReader, spare *[1]api.ReplicaDescriptor) ([]api.ReplicaDescriptor, error) {
	if spare == nil {
		return arrayOf(r, "object replicas", api.MaxReplicas, "object", "replicas", decodeReplica)
	}
	n, err := r.boundedArrayLen("object replicas", api.MaxReplicas, "object", "replicas")
	if err != nil || n < 0 {
		return nil, err
	}
	if n == 1 {
		return decodeInto(r, spare[:], decodeReplica)
	}
	return decodeInto(r, make([]api.ReplicaDescriptor, n), decodeReplica)
}

func decodeReplica(r *mpReader, d *api.ReplicaDescriptor) error {
	const rec = "replica"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "kind":
			var k uint8
			k, err = r.uint8("replica kind")
			d.Kind = api.ReplicaKind(k)
		case "seg":
			d.Segment, err = as[api.SegmentID](r.strShared("replica segment", api.MaxIDLen))
		case "pool":
			d.Pool, err = r.strShared("replica pool", api.MaxIDLen)
		case "dfs":
			d.DFS, err = optional(r, decodeDFSDescriptor)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

// maxDFSPathLen bounds a DFS replica's path below the DFS root.
const maxDFSPathLen = 4096

func decodeDFSDescriptor(r *mpReader, d *api.DFSDescriptor) error {
	const rec = "dfs descriptor"
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "alloc":
			d.Allocator, err = r.str("dfs allocator", api.MaxIDLen)
		case "path":
			d.Path, err = r.str("dfs path", maxDFSPathLen)
		case "unit":
			d.UnitID, err = r.uint("dfs unit")
		case "off":
			d.Offset, err = r.int("dfs offset")
		case "size":
			d.Size, err = r.int("dfs size")
		case "asize":
			d.AlignedSize, err = r.int("dfs aligned size")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}
