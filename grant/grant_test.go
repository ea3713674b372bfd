package grant

import (
	"errors"
	"testing"
	"time"

	"sexton/api"
)

func TestVerifyRefusesEveryAlteredField(t *testing.T) {
	key := NewKey()
	now := time.Unix(1000, 0)
	inc := api.ObjectIncarnation{High: 7, Low: 42}
	g := Sign(key, api.WriteGrant{Segment: "seg-a", Key: "k", Incarnation: inc, Expires: now.Add(time.Minute).UnixNano(), Size: 100})
	if err := Verify(key, &g, "seg-a", "k", inc, 100, now); err != nil {
		t.Fatalf("valid grant refused: %v", err)
	}
	cases := map[string]func() error{
		"no grant":      func() error { return Verify(key, nil, "seg-a", "k", inc, 100, now) },
		"no key":        func() error { return Verify(nil, &g, "seg-a", "k", inc, 100, now) },
		"other segment": func() error { return Verify(key, &g, "seg-b", "k", inc, 100, now) },
		"other key":     func() error { return Verify(key, &g, "seg-a", "k2", inc, 100, now) },
		"other inc": func() error {
			return Verify(key, &g, "seg-a", "k", api.ObjectIncarnation{High: 7, Low: 43}, 100, now)
		},
		"expired":            func() error { return Verify(key, &g, "seg-a", "k", inc, 100, now.Add(time.Minute)) },
		"other key material": func() error { return Verify(NewKey(), &g, "seg-a", "k", inc, 100, now) },
		"forged expiry": func() error {
			f := g
			f.Expires += int64(time.Hour)
			return Verify(key, &f, "seg-a", "k", inc, 100, now.Add(time.Minute))
		},
		"other size":  func() error { return Verify(key, &g, "seg-a", "k", inc, 99, now) },
		"empty write": func() error { return Verify(key, &g, "seg-a", "k", inc, 0, now) },
		"forged size": func() error {
			f := g
			f.Size = 99
			return Verify(key, &f, "seg-a", "k", inc, 99, now)
		},
		// A sized grant with its size dropped does not pass as a grant of
		// an older master, which binds no size.
		"size dropped": func() error {
			f := g
			f.Size = 0
			return Verify(key, &f, "seg-a", "k", inc, 0, now)
		},
		"forged segment": func() error {
			f := g
			f.Segment = "seg-b"
			return Verify(key, &f, "seg-b", "k", inc, 100, now)
		},
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, api.ErrGrantRefused) {
			t.Errorf("%s: got %v, want GRANT_REFUSED", name, err)
		}
	}
}

// TestVerifyAcceptsAnOlderMastersGrant: a grant signed before grants
// carried a size (an older master during an upgrade) binds no size and is
// accepted for a write of any length; with a size set it is refused.
func TestVerifyAcceptsAnOlderMastersGrant(t *testing.T) {
	key := NewKey()
	now := time.Unix(1000, 0)
	inc := api.ObjectIncarnation{High: 7, Low: 42}
	g := api.WriteGrant{Segment: "seg-a", Key: "k", Incarnation: inc, Expires: now.Add(time.Minute).UnixNano()}
	g.MAC = mac(key, &g, legacyMACVersion)
	for _, size := range []int64{0, 1, 1 << 20} {
		if err := Verify(key, &g, "seg-a", "k", inc, size, now); err != nil {
			t.Fatalf("older master's grant refused for %d bytes: %v", size, err)
		}
	}
	g.Size = 10
	if err := Verify(key, &g, "seg-a", "k", inc, 10, now); !errors.Is(err, api.ErrGrantRefused) {
		t.Fatalf("older master's grant with a size added: %v, want GRANT_REFUSED", err)
	}
}
