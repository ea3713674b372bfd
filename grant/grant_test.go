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
	g := Sign(key, api.WriteGrant{Segment: "seg-a", Key: "k", Incarnation: inc, Expires: now.Add(time.Minute).UnixNano()})
	if err := Verify(key, &g, "seg-a", "k", inc, now); err != nil {
		t.Fatalf("valid grant refused: %v", err)
	}
	cases := map[string]func() error{
		"no grant":      func() error { return Verify(key, nil, "seg-a", "k", inc, now) },
		"no key":        func() error { return Verify(nil, &g, "seg-a", "k", inc, now) },
		"other segment": func() error { return Verify(key, &g, "seg-b", "k", inc, now) },
		"other key":     func() error { return Verify(key, &g, "seg-a", "k2", inc, now) },
		"other inc": func() error {
			return Verify(key, &g, "seg-a", "k", api.ObjectIncarnation{High: 7, Low: 43}, now)
		},
		"expired":            func() error { return Verify(key, &g, "seg-a", "k", inc, now.Add(time.Minute)) },
		"other key material": func() error { return Verify(NewKey(), &g, "seg-a", "k", inc, now) },
		"forged expiry": func() error {
			f := g
			f.Expires += int64(time.Hour)
			return Verify(key, &f, "seg-a", "k", inc, now.Add(time.Minute))
		},
		"forged segment": func() error {
			f := g
			f.Segment = "seg-b"
			return Verify(key, &f, "seg-b", "k", inc, now)
		},
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, api.ErrGrantRefused) {
			t.Errorf("%s: got %v, want GRANT_REFUSED", name, err)
		}
	}
}
