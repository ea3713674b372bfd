package snapshot

import (
	"fmt"

	"sexton/api"
)

// Record shapes of format 1.0.0, read only. 1.0.0 predates incarnations,
// put ids, mount epochs, capabilities, delete tasks and the state section;
// its replicas were all LOCAL_DISK. The structs document the shapes (and
// the test-only 1.0.0 encoder marshals them); decoding is hand-written like
// the 1.1.0 records.

type object100 struct {
	Key      string       `msgpack:"key"`
	Tenant   string       `msgpack:"tenant"`
	Size     int64        `msgpack:"size"`
	Created  int64        `msgpack:"created"`
	Replicas []replica100 `msgpack:"replicas"`
}

type replica100 struct {
	Segment api.SegmentID `msgpack:"seg"`
	Pool    string        `msgpack:"pool"`
}

type segment100 struct {
	ID       api.SegmentID `msgpack:"id"`
	ClientID string        `msgpack:"client"`
	Pool     string        `msgpack:"pool"`
	Capacity int64         `msgpack:"cap"`
	Endpoint string        `msgpack:"ep"`
	Mounted  bool          `msgpack:"mounted"`
}

// decodeObject100 decodes a 1.0.0 object and converts it: incarnation zero
// (the legacy incarnation), COMPLETE (1.0.0 stored only completed puts),
// every replica LOCAL_DISK, no put id.
func decodeObject100(r *mpReader, o *Object) error {
	const rec = "object (1.0.0)"
	*o = Object{State: ObjectComplete}
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "key":
			o.Key, err = r.str("object key", api.MaxKeyLen)
		case "tenant":
			o.Tenant, err = r.strShared("object tenant", api.MaxTenantLen)
		case "size":
			o.Size, err = r.int("object size")
		case "created":
			o.Created, err = r.int("object created")
		case "replicas":
			o.Replicas, err = decodeReplicas100(r)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}

func decodeReplicas100(r *mpReader) ([]api.ReplicaDescriptor, error) {
	n, err := r.arrayLen("object replicas")
	if err != nil || n < 0 {
		return nil, err
	}
	if n > api.MaxReplicas {
		return nil, fmt.Errorf("%w: object has %d replicas, more than %d", ErrTooLarge, n, api.MaxReplicas)
	}
	reps := make([]api.ReplicaDescriptor, n)
	for i := range reps {
		const rec = "replica (1.0.0)"
		rep := &reps[i]
		rep.Kind = api.ReplicaLocalDisk
		err := r.eachField(rec, func(name []byte) (err error) {
			var s string
			switch string(name) {
			case "seg":
				s, err = r.strShared("replica segment", api.MaxIDLen)
				rep.Segment = api.SegmentID(s)
			case "pool":
				rep.Pool, err = r.strShared("replica pool", api.MaxIDLen)
			default:
				return errUnknownField(rec, name)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return reps, nil
}

// decodeSegment100 decodes a 1.0.0 segment and converts it: mount epoch
// zero, no capabilities (so no delete tasks until the holder remounts and
// advertises them), not retired.
func decodeSegment100(r *mpReader, s *Segment) error {
	const rec = "segment (1.0.0)"
	*s = Segment{}
	return r.eachField(rec, func(name []byte) (err error) {
		var str string
		switch string(name) {
		case "id":
			str, err = r.str("segment id", api.MaxIDLen)
			s.ID = api.SegmentID(str)
		case "client":
			s.ClientID, err = r.str("segment client", api.MaxIDLen)
		case "pool":
			s.Pool, err = r.str("segment pool", api.MaxIDLen)
		case "cap":
			s.Capacity, err = r.int("segment capacity")
		case "ep":
			s.Endpoint, err = r.str("segment endpoint", api.MaxIDLen)
		case "mounted":
			s.Mounted, err = r.bool("segment mounted")
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}
