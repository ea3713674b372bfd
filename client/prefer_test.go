package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sexton/api"
	"sexton/client"
)

// A put that prefers a segment lands there, named by segment id or by
// holder endpoint, through Put and PutBatch alike; with a preference no
// segment matches it is placed anyway; the values read back.
func TestPutPreferPlacesOnTheNamedSegment(t *testing.T) {
	cl, second := twoHolders(t)
	ctx := context.Background()
	var ls api.ListSegmentsResponse
	if err := cl.Call(ctx, api.MethodListSegments, &api.Empty{}, &ls); err != nil {
		t.Fatal(err)
	}
	var first api.SegmentInfo
	for _, s := range ls.Segments {
		if s.Mounted && s.ID != second.seg {
			first = s
		}
	}
	if first.ID == "" || first.Endpoint == "" {
		t.Fatalf("no first segment with an endpoint in %+v", ls.Segments)
	}
	// A mounted holder takes puts once the master has its first heartbeat.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := cl.Put(ctx, "prefer/warm", []byte("w"), client.PutOptions{Prefer: []string{string(second.seg)}}); err != nil {
			t.Fatal(err)
		}
		st, err := cl.Stat(ctx, "prefer/warm")
		if err == nil && len(st.Object.Replicas) == 1 && st.Object.Replicas[0].Segment == second.seg {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a put preferring the second holder %s never landed there: %+v %v", second.seg, st.Object, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	for _, tc := range []struct {
		name   string
		prefer []string
		want   api.SegmentID
	}{
		{"second by id", []string{string(second.seg)}, second.seg},
		{"first by endpoint", []string{first.Endpoint}, first.ID},
		{"unknown then second", []string{"nowhere:1", string(second.seg)}, second.seg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := client.PutOptions{Prefer: tc.prefer}
			var items []client.PutItem
			for i := range 12 {
				key := fmt.Sprintf("prefer/%s/%02d", tc.name, i)
				if i%2 == 0 {
					if _, err := cl.Put(ctx, key, value(i, 300), opt); err != nil {
						t.Fatalf("Put %s: %v", key, err)
					}
					continue
				}
				items = append(items, client.PutItem{Key: key, Value: value(i, 300), PutOptions: opt})
			}
			res, err := cl.PutBatch(ctx, items)
			if err != nil {
				t.Fatalf("PutBatch: %v", err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatalf("%s: %v", r.Key, r.Err)
				}
			}
			keys := make([]string, 12)
			for i := range keys {
				keys[i] = fmt.Sprintf("prefer/%s/%02d", tc.name, i)
			}
			got, err := cl.GetBatch(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				if g.Err != nil || string(g.Value) != string(value(i, 300)) {
					t.Fatalf("%s: %v (%d bytes)", keys[i], g.Err, len(g.Value))
				}
				if len(g.Info.Replicas) != 1 || g.Info.Replicas[0].Segment != tc.want {
					t.Fatalf("%s placed on %+v, want segment %s", keys[i], g.Info.Replicas, tc.want)
				}
			}
		})
	}

	// No segment matches: placed as if nothing were preferred.
	if _, err := cl.Put(ctx, "prefer/none", []byte("v"), client.PutOptions{Prefer: []string{"nowhere"}}); err != nil {
		t.Fatalf("Put preferring no live segment: %v", err)
	}
	// More entries than the masters take: refused, naming the limit.
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("h%d", i)
	}
	if _, err := cl.Put(ctx, "prefer/many", []byte("v"), client.PutOptions{Prefer: many}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("Put preferring 17 segments: %v, want INVALID_PARAMS", err)
	}
	ex, err := cl.Exist(ctx, []string{"prefer/none", "prefer/many", "prefer/second by id/00"})
	if err != nil || len(ex) != 3 || !ex[0] || ex[1] || !ex[2] {
		t.Fatalf("Exist: %v %v, want [true false true]", ex, err)
	}
}
