package dfsalloc

import (
	"bytes"
	"testing"

	"sexton/snapshot"
)

// dfsSink collects the dfs_buckets records of a snapshot the way the fsm's
// restore sink should: strict decode per record, Restore at the end.
type dfsSink struct {
	raw  [][]byte
	recs []Record
}

func (s *dfsSink) Header(snapshot.Header) error { return nil }

// Section takes the dfs_buckets records and passes over the others.
func (s *dfsSink) Section(name string) (func(any) error, error) {
	if name != snapshot.SectionDFSBuckets {
		return func(any) error { return nil }, nil
	}
	return func(rec any) error { return s.dfsRecord(rec.([]byte)) }, nil
}

func (s *dfsSink) dfsRecord(raw []byte) error {
	r, err := DecodeRecord(raw)
	if err != nil {
		return err
	}
	s.raw = append(s.raw, raw)
	s.recs = append(s.recs, r)
	return nil
}

// TestSnapshotSectionRoundTrip writes Records into a real 1.1.0 snapshot's
// dfs_buckets section and restores from what snapshot.Read hands back: the
// bytes in the stream are EncodeRecord's, and the restored allocator writes
// them again.
func TestSnapshotSectionRoundTrip(t *testing.T) {
	for name, a := range map[string]Allocator{"bucket": bucketState(t), "shard": shardState(t)} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := snapshot.NewWriter(&buf, snapshot.Header{ClusterID: 7, LastIndex: 10, LastTerm: 2, Created: t0})
			must(t, err)
			for _, sec := range []string{snapshot.SectionMetadata, snapshot.SectionSegments} {
				must(t, w.BeginSection(sec))
				must(t, w.EndSection())
			}
			must(t, w.BeginSection(snapshot.SectionState))
			must(t, w.WriteRecord(&snapshot.State{MasterEpoch: 1}))
			must(t, w.EndSection())
			for _, sec := range []string{snapshot.SectionTasks, snapshot.SectionSessions, snapshot.SectionJobs} {
				must(t, w.BeginSection(sec))
				must(t, w.EndSection())
			}
			must(t, w.BeginSection(snapshot.SectionDFSBuckets))
			for _, r := range a.Records() {
				must(t, w.WriteRecord(r))
			}
			must(t, w.EndSection())
			must(t, w.Close())

			sink := &dfsSink{}
			if _, err := snapshot.Read(bytes.NewReader(buf.Bytes()), sink); err != nil {
				t.Fatalf("snapshot.Read: %v", err)
			}
			var want bytes.Buffer
			for i, r := range a.Records() {
				raw, err := EncodeRecord(r)
				must(t, err)
				if !bytes.Equal(raw, sink.raw[i]) {
					t.Fatalf("record %d: snapshot bytes %x, EncodeRecord %x", i, sink.raw[i], raw)
				}
				want.Write(raw)
			}
			b := mustNew(t, a.Config())
			must(t, b.Restore(sink.recs))
			if !bytes.Equal(encoded(t, b), want.Bytes()) {
				t.Fatal("restored from the snapshot, the allocator writes other records")
			}
		})
	}
}
