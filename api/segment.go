package api

// SegmentID is a LOCAL_DISK directory's stable identity (a UUID), stored in
// the directory's marker file and never changed.
type SegmentID string

// Capability is a feature a holder advertises when it mounts. The master
// relies on a feature only when the segment advertises it.
type Capability string

const (
	// CapObjectTombstoneV1 says the holder understands FetchLocalDeleteTasks,
	// durable tombstones and AckLocalDeleteTasks. Without it the master
	// creates no delete tasks for the segment and refuses its fetches.
	CapObjectTombstoneV1 Capability = "OBJECT_TOMBSTONE_V1"
)

// HasCapability reports whether caps contains c.
func HasCapability(caps []Capability, c Capability) bool {
	for _, x := range caps {
		if x == c {
			return true
		}
	}
	return false
}

// SegmentInfo is the master's view of one LOCAL_DISK segment.
type SegmentInfo struct {
	ID           SegmentID    `msgpack:"id"`
	ClientID     string       `msgpack:"client"`
	Pool         string       `msgpack:"pool"`
	Capacity     int64        `msgpack:"cap"`
	Capabilities []Capability `msgpack:"caps"`
	Endpoint     string       `msgpack:"ep"`
	MountEpoch   uint64       `msgpack:"epoch"`
	Mounted      bool         `msgpack:"mounted"`
	Retired      bool         `msgpack:"retired"`
	PendingTasks int          `msgpack:"pending"`
}
