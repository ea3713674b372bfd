package api

import "testing"

// A batch remove's expected incarnations are none, or one per key: a
// count between (or beyond) is refused wherever the rule is checked.
func TestIfIncarnationsFit(t *testing.T) {
	one := []ObjectIncarnation{{High: 1, Low: 7}}
	two := []ObjectIncarnation{{High: 1, Low: 7}, {}}
	for _, c := range []struct {
		ifInc []ObjectIncarnation
		keys  int
		want  bool
	}{
		{nil, 0, true},
		{nil, 3, true},
		{[]ObjectIncarnation{}, 3, true},
		{two, 2, true},
		{one, 1, true},
		{one, 2, false},
		{two, 1, false},
		{two, 3, false},
		{one, 0, false},
	} {
		if got := IfIncarnationsFit(c.ifInc, c.keys); got != c.want {
			t.Errorf("IfIncarnationsFit(%d incarnations, %d keys) = %v, want %v", len(c.ifInc), c.keys, got, c.want)
		}
	}
}
