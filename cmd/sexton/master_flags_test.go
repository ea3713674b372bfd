package main

import (
	"errors"
	"strings"
	"testing"
)

// --gc-heap-floor defaults to 0 (off), takes a size or 0, and refuses what
// is not a size or is past 1TiB with a usage error naming the flag.
func TestMasterHeapFloorFlag(t *testing.T) {
	t.Setenv("SEXTON_GC_HEAP_FLOOR", "")
	for _, tc := range []struct {
		args []string
		want uint64
	}{
		{nil, 0},
		{[]string{"--gc-heap-floor", "512MiB"}, 512 << 20},
		{[]string{"--gc-heap-floor", "0"}, 0},
		{[]string{"--gc-heap-floor", "64MiB"}, 64 << 20},
		{[]string{"--gc-heap-floor", "1TiB"}, 1 << 40},
	} {
		opts, parse := masterFlags("master")
		if err := parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if opts.HeapFloor != tc.want {
			t.Errorf("%v: floor %d, want %d", tc.args, opts.HeapFloor, tc.want)
		}
	}
	for _, bad := range []string{"lots", "-1MiB", "2TiB", "NaNMiB"} {
		_, parse := masterFlags("master")
		err := parse([]string{"--gc-heap-floor", bad})
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--gc-heap-floor") {
			t.Errorf("%q: got %v, want a usage error naming --gc-heap-floor", bad, err)
		}
	}
}

// --raft-wal-segment-size defaults to raft-wal's 64MiB, takes a size from
// 64KiB to 1GiB, and refuses anything else with a usage error naming the
// flag (a segment past 4 GiB overflows raft-wal's 32-bit offsets).
func TestMasterWALSegmentSizeFlag(t *testing.T) {
	t.Setenv("SEXTON_RAFT_WAL_SEGMENT_SIZE", "")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 64 << 20},
		{[]string{"--raft-wal-segment-size", "64KiB"}, 64 << 10},
		{[]string{"--raft-wal-segment-size", "1GiB"}, 1 << 30},
	} {
		opts, parse := masterFlags("master")
		if err := parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if opts.WALSegmentSize != tc.want {
			t.Errorf("%v: segment size %d, want %d", tc.args, opts.WALSegmentSize, tc.want)
		}
	}
	for _, bad := range []string{"big", "0", "32KiB", "5GiB"} {
		_, parse := masterFlags("master")
		err := parse([]string{"--raft-wal-segment-size", bad})
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--raft-wal-segment-size") {
			t.Errorf("%q: got %v, want a usage error naming --raft-wal-segment-size", bad, err)
		}
	}
}
