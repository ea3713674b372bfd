package grant

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"sexton/api"
)

// Lifetime bounds every holder relies on (its tombstone floor keeps an
// entry until every grant that could name an incarnation at or below it
// has expired).
const (
	// MaxLifetime is the longest a leader may make a grant live. A master
	// configured with longer grants refuses to start; a holder refuses a
	// grant expiring later than MaxLifetime + MaxClockSkew from its now.
	MaxLifetime = 10 * time.Minute
	// MaxClockSkew bounds how far a leader's clock may run ahead of a
	// holder's.
	MaxClockSkew = time.Minute
)

// macVersion is mixed into every MAC so a future layout cannot be confused
// with this one.
// macVersion is the form of the MAC Sign computes: version 2 covers Size.
// legacyMACVersion is a grant signed before grants carried a size (a
// master of an older build during an upgrade): it binds no size, and is
// accepted only with Size zero.
const (
	macVersion       = 2
	legacyMACVersion = 1
)

// NewKey draws a fresh grant key.
func NewKey() []byte {
	k := make([]byte, api.GrantKeyLen)
	if _, err := rand.Read(k); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return k
}

// Sign returns g with its MAC set under key.
func Sign(key []byte, g api.WriteGrant) api.WriteGrant {
	g.MAC = mac(key, &g, macVersion)
	return g
}

// Verify checks g against key, the segment and write it is presented for,
// and the holder's clock. The error is GRANT_REFUSED naming the problem.
func Verify(key []byte, g *api.WriteGrant, seg api.SegmentID, k string, inc api.ObjectIncarnation, size int64, now time.Time) error {
	switch {
	case len(key) != api.GrantKeyLen:
		return api.Errorf(api.CodeGrantRefused, "this holder has no grant key yet (not mounted)")
	case g == nil:
		return api.Errorf(api.CodeGrantRefused, "write of %q %s carries no grant", k, inc)
	case g.Segment != seg:
		return api.Errorf(api.CodeGrantRefused, "grant is for segment %s, this is %s", g.Segment, seg)
	case g.Key != k || g.Incarnation != inc:
		return api.Errorf(api.CodeGrantRefused, "grant is for %q %s, the write is %q %s", g.Key, g.Incarnation, k, inc)
	}
	sized := hmac.Equal(g.MAC, mac(key, g, macVersion))
	switch {
	case !sized && (g.Size != 0 || !hmac.Equal(g.MAC, mac(key, g, legacyMACVersion))):
		return api.Errorf(api.CodeGrantRefused, "grant for %q %s has a bad MAC (another cluster's, or forged)", k, inc)
	case sized && g.Size != size:
		return api.Errorf(api.CodeGrantRefused, "grant for %q %s is for a value of %d bytes, not %d", k, inc, g.Size, size)
	case now.UnixNano() >= g.Expires:
		return api.Errorf(api.CodeGrantRefused, "grant for %q %s expired %s ago", k, inc, now.Sub(time.Unix(0, g.Expires)).Round(time.Millisecond))
	}
	return nil
}

func mac(key []byte, g *api.WriteGrant, version uint64) []byte {
	h := hmac.New(sha256.New, key)
	var b [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(version)
	put(uint64(len(g.Segment)))
	h.Write([]byte(g.Segment))
	put(uint64(len(g.Key)))
	h.Write([]byte(g.Key))
	put(g.Incarnation.High)
	put(g.Incarnation.Low)
	put(uint64(g.Expires))
	if version >= 2 {
		put(uint64(g.Size))
	}
	return h.Sum(nil)
}
