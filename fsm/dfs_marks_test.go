package fsm

import (
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"sexton/api"
	"sexton/fsm/dfsalloc"
	"sexton/snapshot"
)

// The mark queue travels in the dfs_buckets head record, which must fit
// one snapshot chunk: a queue at either bound (most marks with short keys,
// most bytes with the longest keys) encodes well below it.
func TestFullMarkQueueFitsOneSnapshotChunk(t *testing.T) {
	d := api.DFSDescriptor{Allocator: dfsalloc.KindBucket, Path: dfsalloc.BucketPath(dfsalloc.MaxBucketID), UnitID: dfsalloc.MaxBucketID,
		Offset: 1 << 40, Size: 1 << 30, AlignedSize: 1 << 30}
	inc := api.ObjectIncarnation{High: ^uint64(0), Low: ^uint64(0)}
	for _, keyLen := range []int{1, api.MaxKeyLen} {
		var marks []DFSMark
		size := 0
		for len(marks) < MaxDFSMarks {
			m := DFSMark{Key: strings.Repeat("k", keyLen-1) + string(rune('a'+len(marks)%26)), Inc: inc, Desc: d, Through: true}
			if size+markBytes(m) > MaxDFSMarkBytes {
				break
			}
			marks = append(marks, m)
			size += markBytes(m)
		}
		b, err := msgpack.Marshal(&dfsSectionHead{V: dfsSectionV1, Settings: dfsSettings("bucket"), Clock: 1 << 62, Marks: marks})
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > snapshot.MaxChunkLen*7/8 {
			t.Fatalf("%d marks of %d-byte keys encode to %d bytes; the head record must fit a %d-byte chunk with room to spare", len(marks), keyLen, len(b), snapshot.MaxChunkLen)
		}
		if _, _, err := restoreDFSMarks(marks); err != nil {
			t.Fatalf("a queue at the bound does not restore: %v", err)
		}
	}
}
