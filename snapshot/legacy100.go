package snapshot

import (
	"fmt"

	"sexton/api"
)

// Record shapes of format 1.0.0, read only. 1.0.0 predates incarnations,
// put ids, mount epochs, capabilities, delete tasks and the state section;
// its replicas were all LOCAL_DISK. The structs document the shapes (and
// the test-only 1.0.0 encoder marshals them); decodeObject and
// decodeSegment read them, admitting only these fields.

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

// The fields of 1.0.0's records; decodeObject and decodeSegment refuse
// any other in a 1.0.0 stream.
var (
	objectFields100  = map[string]bool{"key": true, "tenant": true, "size": true, "created": true, "replicas": true}
	segmentFields100 = map[string]bool{"id": true, "client": true, "pool": true, "cap": true, "ep": true, "mounted": true}
)

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
