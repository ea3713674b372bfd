package api

import "testing"

// TestIfIncMismatch: no expected incarnations, or one per key, fit; any
// other count is named.
func TestIfIncMismatch(t *testing.T) {
	for _, c := range []struct {
		ifInc, keys int
		fits        bool
	}{{0, 0, true}, {0, 3, true}, {3, 3, true}, {1, 3, false}, {4, 3, false}, {1, 0, false}} {
		m := IfIncMismatch(c.ifInc, c.keys)
		if (m == "") != c.fits {
			t.Errorf("IfIncMismatch(%d, %d) = %q, want fits=%v", c.ifInc, c.keys, m, c.fits)
		}
	}
}
