package client

import (
	"slices"
	"testing"

	"sexton/api"
)

// Reads try the replicas ReadPrefer names exactly first, then those on a
// host it names, then the rest, each group in the master's order.
func TestReadOrder(t *testing.T) {
	r := func(seg, ep string) api.ReplicaLocation {
		return api.ReplicaLocation{ReplicaDescriptor: api.ReplicaDescriptor{Kind: api.ReplicaLocalDisk, Segment: api.SegmentID(seg)}, Endpoint: ep}
	}
	master := []api.ReplicaLocation{r("a", "10.0.0.1:7301"), r("b", "10.0.0.2:7301"), r("c", "10.0.0.2:7302"), r("d", "10.0.0.3:7301"), r("e", "")}
	segs := func(rs []api.ReplicaLocation) string {
		var s string
		for _, x := range rs {
			s += string(x.Segment)
		}
		return s
	}
	for _, tc := range []struct {
		prefer []string
		want   string
	}{
		{nil, "abcde"},
		{[]string{"10.0.0.2"}, "bcade"},
		{[]string{"10.0.0.2:1234"}, "bcade"}, // Mooncake's host:port, its port not the holder's
		{[]string{"10.0.0.2", "10.0.0.2:7302"}, "cbade"},
		{[]string{"d"}, "dabce"},
		{[]string{"10.0.0.3:7301", "a"}, "adbce"},
		{[]string{"elsewhere"}, "abcde"},
	} {
		c := &Client{cfg: Config{ReadPrefer: tc.prefer}}
		in := slices.Clone(master)
		if got := segs(c.readOrder(in)); got != tc.want {
			t.Errorf("ReadPrefer %q: order %s, want %s", tc.prefer, got, tc.want)
		}
		if segs(in) != "abcde" {
			t.Fatalf("readOrder reordered its argument")
		}
	}
}
