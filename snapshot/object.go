package snapshot

import (
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

// fieldSet detects a field that appears twice in one record map; msgpack
// would silently keep the last, which would hide a corrupt writer.
type fieldSet uint32

func (s *fieldSet) add(bit uint, record, name string) error {
	if *s&(1<<bit) != 0 {
		return fmt.Errorf("%w: %s: field %q appears twice", ErrCorrupt, record, name)
	}
	*s |= 1 << bit
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
func decodeObject(r *mpReader, o *Object, spare *[1]api.ReplicaDescriptor) error {
	const rec = "object"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		switch string(name) {
		case "key":
			if err = seen.add(0, rec, "key"); err == nil {
				o.Key, err = r.str("object key", api.MaxKeyLen)
			}
		case "tenant":
			if err = seen.add(1, rec, "tenant"); err == nil {
				o.Tenant, err = r.strShared("object tenant", api.MaxTenantLen)
			}
		case "size":
			if err = seen.add(2, rec, "size"); err == nil {
				o.Size, err = r.int("object size")
			}
		case "inc":
			if err = seen.add(3, rec, "inc"); err == nil {
				err = decodeIncarnation(r, &o.Incarnation)
			}
		case "state":
			if err = seen.add(4, rec, "state"); err == nil {
				var s uint8
				s, err = r.uint8("object state")
				o.State = ObjectState(s)
			}
		case "created":
			if err = seen.add(5, rec, "created"); err == nil {
				o.Created, err = r.int("object created")
			}
		case "put_id":
			if err = seen.add(6, rec, "put_id"); err == nil {
				o.PutID, err = r.str("object put_id", api.MaxIDLen)
			}
		case "replicas":
			if err = seen.add(7, rec, "replicas"); err == nil {
				o.Replicas, err = decodeReplicas(r, spare)
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeIncarnation(r *mpReader, inc *api.ObjectIncarnation) error {
	const rec = "incarnation"
	if r.peekNil() {
		*inc = api.ObjectIncarnation{}
		return nil
	}
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		switch string(name) {
		case "h":
			if err = seen.add(0, rec, "h"); err == nil {
				inc.High, err = r.uint("incarnation high")
			}
		case "l":
			if err = seen.add(1, rec, "l"); err == nil {
				inc.Low, err = r.uint("incarnation low")
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func decodeReplicas(r *mpReader, spare *[1]api.ReplicaDescriptor) ([]api.ReplicaDescriptor, error) {
	n, err := r.arrayLen("object replicas")
	if err != nil || n < 0 {
		return nil, err
	}
	if n > api.MaxReplicas {
		return nil, fmt.Errorf("%w: object has %d replicas, more than %d", ErrTooLarge, n, api.MaxReplicas)
	}
	if n == 1 && spare != nil {
		return decodeReplicasInto(r, spare[:])
	}
	return decodeReplicasInto(r, make([]api.ReplicaDescriptor, n))
}

// decodeReplicasInto decodes len(reps) replica descriptors into reps.
func decodeReplicasInto(r *mpReader, reps []api.ReplicaDescriptor) ([]api.ReplicaDescriptor, error) {
	for i := range reps {
		if err := decodeReplica(r, &reps[i]); err != nil {
			return nil, err
		}
	}
	return reps, nil
}

func decodeReplica(r *mpReader, d *api.ReplicaDescriptor) error {
	const rec = "replica"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		switch string(name) {
		case "kind":
			if err = seen.add(0, rec, "kind"); err == nil {
				var k uint8
				k, err = r.uint8("replica kind")
				d.Kind = api.ReplicaKind(k)
			}
		case "seg":
			if err = seen.add(1, rec, "seg"); err == nil {
				var s string
				s, err = r.strShared("replica segment", api.MaxIDLen)
				d.Segment = api.SegmentID(s)
			}
		case "pool":
			if err = seen.add(2, rec, "pool"); err == nil {
				d.Pool, err = r.strShared("replica pool", api.MaxIDLen)
			}
		case "dfs":
			if err = seen.add(3, rec, "dfs"); err == nil {
				d.DFS, err = decodeDFSDescriptor(r)
			}
		default:
			return errUnknownField(rec, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// maxDFSPathLen bounds a DFS replica's path below the DFS root.
const maxDFSPathLen = 4096

func decodeDFSDescriptor(r *mpReader) (*api.DFSDescriptor, error) {
	const rec = "dfs descriptor"
	if r.peekNil() {
		return nil, nil
	}
	n, err := r.recordMap(rec)
	if err != nil {
		return nil, err
	}
	d := &api.DFSDescriptor{}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return nil, err
		}
		switch string(name) {
		case "alloc":
			if err = seen.add(0, rec, "alloc"); err == nil {
				d.Allocator, err = r.str("dfs allocator", api.MaxIDLen)
			}
		case "path":
			if err = seen.add(1, rec, "path"); err == nil {
				d.Path, err = r.str("dfs path", maxDFSPathLen)
			}
		case "unit":
			if err = seen.add(2, rec, "unit"); err == nil {
				d.UnitID, err = r.uint("dfs unit")
			}
		case "off":
			if err = seen.add(3, rec, "off"); err == nil {
				d.Offset, err = r.int("dfs offset")
			}
		case "size":
			if err = seen.add(4, rec, "size"); err == nil {
				d.Size, err = r.int("dfs size")
			}
		case "asize":
			if err = seen.add(5, rec, "asize"); err == nil {
				d.AlignedSize, err = r.int("dfs aligned size")
			}
		default:
			return nil, errUnknownField(rec, name)
		}
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}
