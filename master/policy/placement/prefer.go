package placement

import (
	"math/rand/v2"
	"net"
	"slices"
	"time"

	"sexton/api"
	"sexton/master/policy/liveness"
)

// maxPrefer bounds PutStartRequest.Prefer, maxPreferLen each of its entries.
const (
	maxPrefer    = 16
	maxPreferLen = 512
)

// CheckPrefer refuses a Prefer list longer than maxPrefer or with an
// entry empty or longer than maxPreferLen.
func CheckPrefer(prefer []string) error {
	if len(prefer) > maxPrefer {
		return api.Errorf(api.CodeInvalidParams, "%d preferred segments exceed %d", len(prefer), maxPrefer)
	}
	for _, p := range prefer {
		if p == "" || len(p) > maxPreferLen {
			return api.Errorf(api.CodeInvalidParams, "a preferred segment of %d bytes: give a segment id, holder endpoint or host of 1..%d bytes", len(p), maxPreferLen)
		}
	}
	return nil
}

// PlacePreferred places the first replica on a segment the request
// prefers, drawn as place draws, and the others as place does within that
// segment's pool. The segments an entry names exactly (segment id or
// holder endpoint) come first; only when there are none, those on a host
// an entry names ("host" or "host:port", the port being Mooncake's and
// not the holder's). ok is false when no preferred segment can take the
// put (none named, none live with room, or its pool short of holders for
// the other replicas): the caller then places as if nothing were
// preferred.
func PlacePreferred(candidates []api.SegmentInfo, prefer []string, holders *liveness.Holders, ttl time.Duration, now time.Time, size int64, replicaNum int, onlyPool string, rng *rand.Rand) ([]api.SegmentInfo, bool) {
	if len(prefer) == 0 {
		return nil, false
	}
	preferred := slices.DeleteFunc(slices.Clone(candidates), func(seg api.SegmentInfo) bool { return !prefers(prefer, seg, false) })
	if len(preferred) == 0 {
		preferred = slices.DeleteFunc(slices.Clone(candidates), func(seg api.SegmentInfo) bool { return !prefers(prefer, seg, true) })
	}
	if len(preferred) == 0 {
		return nil, false
	}
	first, err := Place(preferred, holders, ttl, now, size, 1, onlyPool, rng)
	if err != nil {
		return nil, false
	}
	if replicaNum == 1 {
		return first, true
	}
	rest := slices.DeleteFunc(slices.Clone(candidates), func(seg api.SegmentInfo) bool { return seg.ID == first[0].ID })
	more, err := Place(rest, holders, ttl, now, size, replicaNum-1, first[0].Pool, rng)
	if err != nil {
		return nil, false
	}
	return append(first, more...), true
}

// prefers reports whether seg is named by prefer: by its id or its
// holder's endpoint, or (byHost) by the host of that endpoint.
func prefers(prefer []string, seg api.SegmentInfo, byHost bool) bool {
	for _, p := range prefer {
		if !byHost && (p == string(seg.ID) || (seg.Endpoint != "" && p == seg.Endpoint)) {
			return true
		}
		if byHost && seg.Endpoint != "" && hostOf(p) == hostOf(seg.Endpoint) {
			return true
		}
	}
	return false
}

// hostOf is the host of "host:port", or the string itself when it has no port.
func hostOf(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}
