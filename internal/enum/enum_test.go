package enum

import "testing"

type color uint8

// The values start at 1 and skip 3, as an enum may.
const (
	red color = iota + 1
	green
	_
	blue
)

var colorNames = []string{red: "red", green: "green", blue: "blue"}

func TestName(t *testing.T) {
	for _, tc := range []struct {
		v    color
		want string
	}{
		{red, "red"},
		{green, "green"},
		{blue, "blue"},
		{0, "unknown"},   // below the first value: an empty entry
		{3, "unknown"},   // a gap in the table
		{5, "unknown"},   // past the table
		{255, "unknown"}, // the largest value
	} {
		if got := Name(colorNames, tc.v, "unknown"); got != tc.want {
			t.Errorf("Name(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
