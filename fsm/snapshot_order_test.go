package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSnapshotKeyOrder: a snapshot lists objects in byte order of their
// keys, whatever the keys share. The write walks the tree of COMPLETE
// keys and merges in the keys that have only a PENDING incarnation, so
// some keys drawn here are left PENDING; the keys share prefixes of every
// length, are prefixes of each other, and use the smallest and largest
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
		pendingOnly := rapid.SliceOfN(rapid.Bool(), len(keys), len(keys)).Draw(rt, "pendingOnly")

		h := newHarness(t, 0)
		h.epoch(7)
		h.mustMount("c1", "seg-1", tombstoneCaps...)
		for i, k := range keys {
			if pendingOnly[i] {
				h.putStart(k, false, "seg-1")
			} else {
				h.put(k, "seg-1")
			}
		}
		v := h.f.Snapshot()
		defer v.Release()
		var got []string
		if err := v.eachInOrder(func(ke keyed) error { got = append(got, ke.key); return nil }); err != nil {
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

// TestViewFrozenUnderWrites: a view written while Apply goes on writing
// the table (on another goroutine, as a master persists a snapshot) holds
// exactly the state it was taken at: byte for byte what a snapshot taken
// then writes. Commands come from cmdGen over four keys, so most writes
// hit keys the view visits, some many times, and some keys come and go.
func TestViewFrozenUnderWrites(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		gen := &cmdGen{pick: func(n int) int { return rng.IntN(n) }, retireOdds: 400, batches: true, sessions: true}
		f := newWithCapacity(16)
		index := uint64(0)
		step := func() {
			index++
			data, err := Encode(gen.next(f))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Apply(index, 1, data); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, index, err)
			}
		}
		for range 300 {
			step()
		}
		want := snapshotBytes(t, f)
		v := f.Snapshot()
		var got bytes.Buffer
		done := make(chan error)
		go func() {
			_, err := v.WriteTo(&got)
			done <- err
		}()
		for range 300 {
			step()
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("seed %d: a view written during Applies differs from the state it was taken at", seed)
		}
		// Written again after all the writes: still the same state.
		if again := writeView(t, v); !bytes.Equal(again, want) {
			t.Fatalf("seed %d: the view's second write differs", seed)
		}
		v.Release()
	}
}

// TestViewWrittenBesideApply: a view of 3,000 keys is written on one
// goroutine while another removes and re-puts every key, so the walk and
// the writes overlap (and the race detector sees them do it); the bytes
// are those of the state the view was taken at.
func TestViewWrittenBesideApply(t *testing.T) {
	h := newHarness(t, 0)
	h.epoch(7)
	h.mustMount("c1", "seg-1", tombstoneCaps...)
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k/%05d", i)
		h.put(keys[i], "seg-1")
	}
	want := snapshotBytes(t, h.f)
	v := h.f.Snapshot()
	defer v.Release()
	var got bytes.Buffer
	done := make(chan error)
	go func() {
		_, err := v.WriteTo(&got)
		done <- err
	}()
	for i := len(keys) - 1; i >= 0; i -= 2 {
		h.remove(keys[i])
		h.put(keys[i-1], "seg-1")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("a view written beside Apply differs from the state it was taken at")
	}
}
