package main

import (
	"errors"
	"strings"
	"testing"
)

// sizeFlagCase is one size flag of `sexton master`: what it parses to
// with no argument and with good ones, and values it must refuse with a
// usage error naming it.
type sizeFlagCase struct {
	flag, env string
	get       func(*masterOptions) int64
	want      map[string]int64 // argument ("" for none) → value
	bad       []string
}

func testSizeFlag(t *testing.T, c sizeFlagCase) {
	t.Helper()
	t.Setenv(c.env, "")
	for arg, want := range c.want {
		var args []string
		if arg != "" {
			args = []string{"--" + c.flag, arg}
		}
		opts, parse := masterFlags("master")
		if err := parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if got := c.get(opts); got != want {
			t.Errorf("%v: %d, want %d", args, got, want)
		}
	}
	for _, bad := range c.bad {
		_, parse := masterFlags("master")
		err := parse([]string{"--" + c.flag, bad})
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--"+c.flag) {
			t.Errorf("%q: got %v, want a usage error naming --%s", bad, err, c.flag)
		}
	}
}

// --gc-heap-floor defaults to 0 (off), takes a size or 0, and refuses what
// is not a size or is past 1TiB.
func TestMasterHeapFloorFlag(t *testing.T) {
	testSizeFlag(t, sizeFlagCase{
		flag: "gc-heap-floor", env: "SEXTON_GC_HEAP_FLOOR",
		get:  func(o *masterOptions) int64 { return int64(o.HeapFloor) },
		want: map[string]int64{"": 0, "512MiB": 512 << 20, "0": 0, "64MiB": 64 << 20, "1TiB": 1 << 40},
		bad:  []string{"lots", "-1MiB", "2TiB", "NaNMiB"},
	})
}

// --raft-wal-segment-size defaults to raft-wal's 64MiB, takes a size from
// 64KiB to 1GiB, and refuses anything else (a segment past 4 GiB would
// overflow raft-wal's 32-bit offsets).
func TestMasterWALSegmentSizeFlag(t *testing.T) {
	testSizeFlag(t, sizeFlagCase{
		flag: "raft-wal-segment-size", env: "SEXTON_RAFT_WAL_SEGMENT_SIZE",
		get:  func(o *masterOptions) int64 { return int64(o.WALSegmentSize) },
		want: map[string]int64{"": 64 << 20, "64KiB": 64 << 10, "1GiB": 1 << 30},
		bad:  []string{"big", "0", "32KiB", "5GiB"},
	})
}
