package client_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
)

// race runs write(0..writers-1) at once and fails t with every error
// they return.
func race(t *testing.T, writers int, write func(g int) []error) {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := write(g)
			mu.Lock()
			errs = append(errs, e...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
}

// ownerOf is the writer g whose valueOf(g) the key holds, byte for byte;
// t fails when it holds none of them.
func ownerOf(t *testing.T, cl *client.Client, key string, writers int, valueOf func(g int) []byte) int {
	t.Helper()
	got, _, err := cl.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	for g := range writers {
		if bytes.Equal(got, valueOf(g)) {
			return g
		}
	}
	t.Fatalf("%s holds %d bytes that no writer wrote", key, len(got))
	return -1
}

// Mooncake's put: many goroutines inserting the same keys at once, each
// with its own value, all succeed; each key reads back one of the values
// written, byte for byte, and at most one call stored it (the one whose
// value it holds). The raw IfAbsent put still answers
// OBJECT_ALREADY_EXISTS for a key that exists.
func TestPutIfAbsentRacesWell(t *testing.T) {
	cl := newTestClient(t, masters)
	ctx := context.Background()
	prefix := fmt.Sprintf("insert/race/%d/", time.Now().UnixNano())
	const writers, keys = 16, 20
	var mu sync.Mutex
	storedBy := map[string][]int{}
	race(t, writers, func(g int) (errs []error) {
		for k := range keys {
			key := fmt.Sprintf("%s%02d", prefix, k)
			_, stored, err := cl.PutIfAbsent(ctx, key, value(g, 4096+k), client.PutOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("writer %d, %s: %w", g, key, err))
			}
			if stored {
				mu.Lock()
				storedBy[key] = append(storedBy[key], g)
				mu.Unlock()
			}
		}
		return errs
	})
	for k := range keys {
		key := fmt.Sprintf("%s%02d", prefix, k)
		owner := ownerOf(t, cl, key, writers, func(g int) []byte { return value(g, 4096+k) })
		if s := storedBy[key]; len(s) > 1 || (len(s) == 1 && s[0] != owner) {
			t.Fatalf("%s: stored by writers %v, holds writer %d's value", key, s, owner)
		}
	}
	_, err := cl.Put(ctx, prefix+"00", []byte("late"), client.PutOptions{IfAbsent: true})
	if api.CodeOf(err) != api.CodeObjectAlreadyExists {
		t.Fatalf("raw IfAbsent put of an existing key: %v, want OBJECT_ALREADY_EXISTS", err)
	}
}

// The batch form races as well: goroutines putting the same batch of keys
// (one of them twice in each batch) all get nil errors per item, and each
// key holds one of the values written.
func TestPutBatchIfAbsentRacesWell(t *testing.T) {
	cl := newTestClient(t, masters)
	ctx := context.Background()
	prefix := fmt.Sprintf("insert/batch/%d/", time.Now().UnixNano())
	const writers, keys = 8, 20
	race(t, writers, func(g int) (errs []error) {
		var items []client.PutItem
		for k := range keys {
			items = append(items, client.PutItem{Key: fmt.Sprintf("%s%02d", prefix, k), Value: value(g, 2000+k)})
		}
		items = append(items, client.PutItem{Key: items[3].Key, Value: value(g+writers, 2003)})
		res, err := cl.PutBatchIfAbsent(ctx, items)
		if err != nil {
			return []error{err}
		}
		for i, r := range res {
			if r.Err != nil || r.Key != items[i].Key {
				errs = append(errs, fmt.Errorf("writer %d item %d: %+v", g, i, r))
			}
		}
		return errs
	})
	for k := range keys {
		ownerOf(t, cl, fmt.Sprintf("%s%02d", prefix, k), writers, func(g int) []byte { return value(g, 2000+k) })
	}
}

// A value put from several slices arrives as their concatenation, and
// GetIntoRanges reads any ranges of it into the caller's slices: the
// parts back at consecutive offsets, ranges with gaps between them, ranges
// that overlap, an empty one. A range outside the value is INVALID_PARAMS
// and fills nothing.
func TestPutFromAndGetIntoRanges(t *testing.T) {
	cl := newTestClient(t, masters)
	ctx := context.Background()
	key := fmt.Sprintf("ranges/%d", time.Now().UnixNano())
	parts := [][]byte{value(1, 1000), {}, value(2, 300<<10), value(3, 5), value(4, 70<<10)}
	whole := bytes.Join(parts, nil)
	if _, err := cl.PutFrom(ctx, key, parts, client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, info, err := cl.Get(ctx, key); err != nil || !bytes.Equal(got, whole) || info.Size != int64(len(whole)) {
		t.Fatalf("Get after PutFrom: %d bytes (equal: %v), size %d, %v", len(got), bytes.Equal(got, whole), info.Size, err)
	}
	consecutive := func() []client.ByteRange {
		var rs []client.ByteRange
		off := int64(0)
		for _, p := range parts {
			rs = append(rs, client.ByteRange{Offset: off, Buf: make([]byte, len(p))})
			off += int64(len(p))
		}
		return rs
	}
	n := int64(len(whole))
	for name, rs := range map[string][]client.ByteRange{
		"the parts": consecutive(),
		"gaps":      {{Offset: 10, Buf: make([]byte, 100)}, {Offset: 5000, Buf: make([]byte, 40<<10)}, {Offset: n - 7, Buf: make([]byte, 7)}},
		"overlaps": {{Offset: 200 << 10, Buf: make([]byte, 64<<10)}, {Offset: 100, Buf: make([]byte, 250<<10)},
			{Offset: 210 << 10, Buf: make([]byte, 10)}, {Offset: 260 << 10, Buf: make([]byte, 100<<10)}, {Offset: 3, Buf: nil}},
		"whole": {{Offset: 0, Buf: make([]byte, n)}},
	} {
		info, err := cl.GetIntoRanges(ctx, key, rs)
		if err != nil || info.Size != n {
			t.Fatalf("%s: size %d, %v", name, info.Size, err)
		}
		for i, r := range rs {
			if want := whole[r.Offset : r.Offset+int64(len(r.Buf))]; !bytes.Equal(r.Buf, want) {
				t.Fatalf("%s: range %d (%d bytes from %d) read wrong", name, i, len(r.Buf), r.Offset)
			}
		}
	}
	for _, r := range []client.ByteRange{{Offset: n - 3, Buf: make([]byte, 4)}, {Offset: -1, Buf: make([]byte, 1)}} {
		first := client.ByteRange{Offset: 0, Buf: make([]byte, 10)}
		info, err := cl.GetIntoRanges(ctx, key, []client.ByteRange{first, r})
		if api.CodeOf(err) != api.CodeInvalidParams || info.Size != n || !bytes.Equal(first.Buf, make([]byte, 10)) {
			t.Fatalf("range %d bytes from %d of a %d-byte value: %v (size %d); want INVALID_PARAMS, nothing read", len(r.Buf), r.Offset, n, err, info.Size)
		}
	}
	if _, err := cl.GetIntoRanges(ctx, key+"/absent", nil); api.CodeOf(err) != api.CodeObjectNotFound {
		t.Fatalf("absent key: %v", err)
	}
}
