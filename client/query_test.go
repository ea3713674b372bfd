package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sexton/client"
	"sexton/transport"
)

// ListAll reads every object under a prefix, or stops at the limit; a
// master answers StatusOf with its own view.
func TestListAllAndStatusOf(t *testing.T) {
	cl := newTestClient(t, masters)
	ctx := context.Background()
	prefix := fmt.Sprintf("listall/%d/", time.Now().UnixNano())
	items := numberedItems(prefix, 5, 64)
	if _, err := cl.PutBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	for limit, want := range map[int]int{0: 5, 3: 3, 9: 5} {
		objs, err := cl.ListAll(prefix, limit, 5*time.Second)
		if err != nil || len(objs) != want {
			t.Fatalf("ListAll(limit %d): %d objects, %v; want %d", limit, len(objs), err, want)
		}
		for i, o := range objs {
			if o.Key != items[i].Key {
				t.Errorf("ListAll(limit %d)[%d] = %s, want %s", limit, i, o.Key, items[i].Key)
			}
		}
	}
	st, err := client.StatusOf(ctx, masters[0], transport.ClientConfig{})
	if err != nil || st.NodeID == "" || st.Objects < 5 {
		t.Errorf("StatusOf: %+v, %v", st, err)
	}
	rows, errs := client.EachStatus([]string{masters[0], "127.0.0.1:1"}, transport.ClientConfig{}, time.Second)
	if len(rows) != 1 || rows[0].NodeID != st.NodeID || len(errs) != 1 || !strings.Contains(errs[0].Error(), "127.0.0.1:1: ") {
		t.Errorf("EachStatus: %+v, %v", rows, errs)
	}
}
