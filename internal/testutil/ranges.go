package testutil

import (
	"cmp"
	"slices"
)

// FileRange is Who's bytes [Off, Off+Size) of the file Path.
type FileRange struct {
	Who, Path string
	Off, Size int64
}

// Overlap finds two of rs that share a byte of one file: it sorts rs by
// file and offset and returns the first such pair, earlier first, or ok
// false when every range is disjoint from the others.
func Overlap(rs []FileRange) (a, b FileRange, ok bool) {
	slices.SortFunc(rs, func(x, y FileRange) int {
		return cmp.Or(cmp.Compare(x.Path, y.Path), cmp.Compare(x.Off, y.Off))
	})
	for i := 1; i < len(rs); i++ {
		if rs[i].Path == rs[i-1].Path && rs[i-1].Off+rs[i-1].Size > rs[i].Off {
			return rs[i-1], rs[i], true
		}
	}
	return FileRange{}, FileRange{}, false
}
