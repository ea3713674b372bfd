package api

// WriteGrant is the leader's permission for one segment to store one
// incarnation of one key (invariant 11). PutStart's answer carries one per
// LOCAL_DISK replica; the client hands it to the holder with the bytes, and
// the holder checks it without asking the master: MAC is an HMAC-SHA256,
// under the cluster's grant key (replicated state, handed to holders when
// they mount), of every other field (package grant computes and checks it).
// Expires is the leader's clock, unix nanoseconds. Size is the value's
// length in bytes: a holder stores only a value of exactly that length,
// and PutCommit only that size, so a put's committed size is the size of
// every copy it names.
type WriteGrant struct {
	Segment     SegmentID         `msgpack:"seg"`
	Key         string            `msgpack:"key"`
	Incarnation ObjectIncarnation `msgpack:"inc"`
	Expires     int64             `msgpack:"exp"`
	Size        int64             `msgpack:"size,omitempty"`
	MAC         []byte            `msgpack:"mac"`
}

// GrantKeyLen is the length of a cluster's grant key in bytes.
const GrantKeyLen = 32
