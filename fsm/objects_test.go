package fsm

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"sexton/api"
)

// TestObjectStaysPacked: there is one object per incarnation, and at ten
// million of them the master's heap is what runs out first. 48 bytes is
// the size class it is allocated in; one more field of any kind takes it
// to the 64-byte class, 16 bytes more per object.
func TestObjectStaysPacked(t *testing.T) {
	if n := unsafe.Sizeof(object{}); n > 48 {
		t.Fatalf("object is %d bytes, want at most 48 (move shared fields into objectAttrs)", n)
	}
}

// TestInternAttrs: objects with the same tenant and DFS-free placement
// share one attrs, anything else gets attrs equal to what it asked for.
// The two placements below made one lookup key when names were joined
// with NUL separators.
func TestInternAttrs(t *testing.T) {
	st := newState(api.Settings{}, false)
	one := []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "s1", Pool: "x\x00\x01s2\x00p"}}
	two := []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "s1", Pool: "x"}, {Kind: api.ReplicaLocalDisk, Segment: "s2", Pool: "p"}}
	dfs := []api.ReplicaDescriptor{{Kind: api.ReplicaDFS, DFS: &api.DFSDescriptor{Path: "f", AlignedSize: 4096}}}
	cases := []struct {
		tenant string
		rs     []api.ReplicaDescriptor
		shared bool
	}{
		{"t", one, true},
		{"t", two, true},
		{"u", two, true},
		{"t", nil, true},
		{"t", dfs, false},
	}
	for _, c := range cases {
		a := st.internAttrs(c.tenant, c.rs)
		if a.tenant != c.tenant || !reflect.DeepEqual(a.replicas, c.rs) {
			t.Fatalf("internAttrs(%q, %v) = %q, %v", c.tenant, c.rs, a.tenant, a.replicas)
		}
		if again := st.internAttrs(c.tenant, slices.Clone(c.rs)); (again == a) != c.shared {
			t.Fatalf("internAttrs(%q, %v): shared %v, want %v", c.tenant, c.rs, again == a, c.shared)
		}
	}
}
