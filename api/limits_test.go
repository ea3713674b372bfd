package api

import "testing"

// A page is what the request asks for, within its bound; nothing asked
// (or nonsense) is the whole bound.
func TestPageLimit(t *testing.T) {
	for _, c := range []struct{ limit, max, want int }{
		{0, 256, 256}, {-1, 256, 256}, {1, 256, 1}, {256, 256, 256}, {257, 256, 256},
	} {
		if got := PageLimit(c.limit, c.max); got != c.want {
			t.Errorf("PageLimit(%d, %d) = %d, want %d", c.limit, c.max, got, c.want)
		}
	}
}
