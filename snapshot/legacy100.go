package snapshot

import (
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
	return arrayOf(r, "object replicas", api.MaxReplicas, "object", "replicas", decodeReplica100)
}

func decodeReplica100(r *mpReader, rep *api.ReplicaDescriptor) error {
	const rec = "replica (1.0.0)"
	rep.Kind = api.ReplicaLocalDisk
	return r.eachField(rec, func(name []byte) (err error) {
		switch string(name) {
		case "seg":
			rep.Segment, err = as[api.SegmentID](r.strShared("replica segment", api.MaxIDLen))
		case "pool":
			rep.Pool, err = r.strShared("replica pool", api.MaxIDLen)
		default:
			return errUnknownField(rec, name)
		}
		return err
	})
}
