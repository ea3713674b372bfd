package master

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sexton/api"
)

// TestListPagesThroughHandler: a client paging with List's cursor sees
// every key under the prefix that exists throughout exactly once, in key
// order, while keys are removed and added between its pages; a page never
// exceeds the limit asked for, and a limit of 0 means the default page.
func TestListPagesThroughHandler(t *testing.T) {
	tc := startCluster(t, 1)
	tc.mountHolder(t, "seg-a", "")
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprintf("dir/%03d", i))
	}
	tc.putMany(t, append(slices.Clone(keys), "dir", "dir0", "dis/1"), 1)

	list := func(cursor string, limit int) *api.ListResponse {
		t.Helper()
		var resp api.ListResponse
		if err := tc.call(api.MethodList, &api.ListRequest{Prefix: "dir/", Cursor: cursor, Limit: limit}, &resp); err != nil {
			t.Fatalf("List after %q: %v", cursor, err)
		}
		return &resp
	}
	if all := list("", 0); len(all.Objects) != len(keys) || all.NextCursor != "" {
		t.Fatalf("default page: %d objects, cursor %q; want %d and none", len(all.Objects), all.NextCursor, len(keys))
	}

	long := strings.Repeat("x", api.MaxKeyLen+1)
	if err := tc.call(api.MethodList, &api.ListRequest{Cursor: long}, &api.ListResponse{}); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("a cursor longer than any key: %v, want INVALID_PARAMS", err)
	}

	var seen []string
	removed := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		resp := list(cursor, 7)
		if len(resp.Objects) > 7 {
			t.Fatalf("page of %d objects, limit 7", len(resp.Objects))
		}
		for _, o := range resp.Objects {
			if !strings.HasPrefix(o.Key, "dir/") || removed[o.Key] {
				t.Fatalf("listed %q: not under the prefix, or removed before this page", o.Key)
			}
			seen = append(seen, o.Key)
		}
		if resp.NextCursor == "" {
			break
		}
		if page > 30 {
			t.Fatal("listing does not end")
		}
		cursor = resp.NextCursor
		// Between pages: remove one key behind the cursor and one ahead of
		// it, and add one behind and one ahead.
		behind, ahead := keys[page], keys[min(len(keys)-1, 7*page+12)]
		for _, k := range []string{behind, ahead} {
			if !removed[k] {
				if err := tc.remove(k); err != nil {
					t.Fatalf("remove %q: %v", k, err)
				}
				removed[k] = true
			}
		}
		tc.putMany(t, []string{fmt.Sprintf("dir/%03d-new", page), fmt.Sprintf("dir/%03d-new", 7*page+12)}, 1)
	}
	if !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != len(seen) {
		t.Fatalf("keys listed out of order or twice: %v", seen)
	}
	for _, k := range keys {
		if !removed[k] && !slices.Contains(seen, k) {
			t.Fatalf("%q existed throughout but was not listed", k)
		}
	}
}
