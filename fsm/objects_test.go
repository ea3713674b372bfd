package fsm

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"sexton/api"
)

// TestTreeNodeSizeClass: there is one tree item per key, and at ten
// million of them the master's heap is what runs out first. A node of
// the complete tree holds up to 2×indexDegree−1 items in one allocation
// with pointers (an 8-byte header in front); at 56-byte items and degree
// 31 that is 3,424 bytes, in the 3,456-byte size class with 1 % to
// spare. One more field in object, or a degree of 32, takes nodes to
// the 4,096-byte class: ~8 bytes more per stored object.
func TestTreeNodeSizeClass(t *testing.T) {
	const headerBytes, sizeClass = 8, 3456
	item := unsafe.Sizeof(completeItem{})
	if n := (2*indexDegree-1)*int(item) + headerBytes; n > sizeClass {
		t.Fatalf("a full node of %d-byte items is %d bytes, over the %d-byte size class (move shared fields into objectAttrs)", item, n, sizeClass)
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
