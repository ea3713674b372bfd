package fsm

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSnapshotKeyOrder: a snapshot lists objects in byte order of their
// keys, whatever the keys share. The write sorts by an abbreviated key
// (8 bytes after the prefix all keys share, zero-padded), so the keys
// drawn here share prefixes of every length, end inside and past those
// 8 bytes, are prefixes of each other, and use the smallest and largest
// bytes a key may hold (NUL is not allowed: api.ValidKey).
func TestSnapshotKeyOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		prefix := rapid.StringOfN(rapid.SampledFrom([]rune{'p', '/'}), 0, 12, -1).Draw(rt, "prefix")
		tail := rapid.SliceOfN(rapid.SampledFrom([]byte{0x01, 'a', 'b', 0xff}), 0, 12)
		keys := rapid.SliceOfNDistinct(rapid.Custom(func(rt *rapid.T) string {
			return prefix + string(tail.Draw(rt, "tail"))
		}), 1, 40, rapid.ID[string]).Filter(func(ks []string) bool {
			return !slices.Contains(ks, "")
		}).Draw(rt, "keys")

		h := newHarness(t, 0)
		h.epoch(7)
		h.mustMount("c1", "seg-1", tombstoneCaps...)
		for _, k := range keys {
			h.put(k, "seg-1")
		}
		v := h.f.Snapshot()
		defer v.Release()
		var got []string
		if err := v.eachSorted(func(ke keyed) error { got = append(got, ke.key); return nil }); err != nil {
			rt.Fatal(err)
		}
		want := slices.Clone(keys)
		slices.SortFunc(want, strings.Compare)
		if !slices.Equal(got, want) {
			rt.Fatalf("snapshot order %q, byte order %q", got, want)
		}
		restored(t, h.f) // and the restore's order check accepts it
	})
}
