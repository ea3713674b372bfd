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
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	*o = Object{State: ObjectComplete}
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
		case "created":
			if err = seen.add(3, rec, "created"); err == nil {
				o.Created, err = r.int("object created")
			}
		case "replicas":
			if err = seen.add(4, rec, "replicas"); err == nil {
				o.Replicas, err = decodeReplicas100(r)
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
		m, err := r.recordMap(rec)
		if err != nil {
			return nil, err
		}
		reps[i].Kind = api.ReplicaLocalDisk
		var seen fieldSet
		for j := 0; j < m; j++ {
			name, err := r.strBytes(rec + " field name")
			if err != nil {
				return nil, err
			}
			var s string
			switch string(name) {
			case "seg":
				if err = seen.add(0, rec, "seg"); err == nil {
					s, err = r.strShared("replica segment", api.MaxIDLen)
					reps[i].Segment = api.SegmentID(s)
				}
			case "pool":
				if err = seen.add(1, rec, "pool"); err == nil {
					reps[i].Pool, err = r.strShared("replica pool", api.MaxIDLen)
				}
			default:
				return nil, errUnknownField(rec, name)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return reps, nil
}

// decodeSegment100 decodes a 1.0.0 segment and converts it: mount epoch
// zero, no capabilities (so no delete tasks until the holder remounts and
// advertises them), not retired.
func decodeSegment100(r *mpReader, s *Segment) error {
	const rec = "segment (1.0.0)"
	n, err := r.recordMap(rec)
	if err != nil {
		return err
	}
	*s = Segment{}
	var seen fieldSet
	for i := 0; i < n; i++ {
		name, err := r.strBytes(rec + " field name")
		if err != nil {
			return err
		}
		var str string
		switch string(name) {
		case "id":
			if err = seen.add(0, rec, "id"); err == nil {
				str, err = r.str("segment id", api.MaxIDLen)
				s.ID = api.SegmentID(str)
			}
		case "client":
			if err = seen.add(1, rec, "client"); err == nil {
				s.ClientID, err = r.str("segment client", api.MaxIDLen)
			}
		case "pool":
			if err = seen.add(2, rec, "pool"); err == nil {
				s.Pool, err = r.str("segment pool", api.MaxIDLen)
			}
		case "cap":
			if err = seen.add(3, rec, "cap"); err == nil {
				s.Capacity, err = r.int("segment capacity")
			}
		case "ep":
			if err = seen.add(4, rec, "ep"); err == nil {
				s.Endpoint, err = r.str("segment endpoint", api.MaxIDLen)
			}
		case "mounted":
			if err = seen.add(5, rec, "mounted"); err == nil {
				s.Mounted, err = r.bool("segment mounted")
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
