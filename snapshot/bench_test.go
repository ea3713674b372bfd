package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"sexton/api"
)

// The scale: 1,000,000 objects with 32-byte keys and one replica,
// plus 50,000 pending tasks.
const (
	benchObjects = 1_000_000
	benchTasks   = 50_000
)

func benchContents() *contents {
	c := &contents{header: fixtureHeader, state: validState()}
	c.objects = make([]Object, benchObjects)
	for i := range c.objects {
		c.objects[i] = Object{
			Key:         fmt.Sprintf("bench/object/%019d", i), // 32 bytes
			Tenant:      "default",
			Size:        int64(4096 + i%1000),
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: uint64(1000 + i)},
			State:       ObjectComplete,
			Created:     1_764_000_000_000_000_000 + int64(i),
			PutID:       "",
			Replicas:    []api.ReplicaDescriptor{{Kind: api.ReplicaLocalDisk, Segment: "7f3c9a1e-0b6d-4c2e-9d8f-1a2b3c4d5e6f", Pool: "ssd"}},
		}
	}
	c.tasks = make([]Task, benchTasks)
	for i := range c.tasks {
		c.tasks[i] = Task{ID: uint64(i + 1), Segment: "7f3c9a1e-0b6d-4c2e-9d8f-1a2b3c4d5e6f",
			Key: fmt.Sprintf("bench/deleted/%018d", i), Tenant: "default",
			Incarnation: api.ObjectIncarnation{High: fixtureCluster, Low: uint64(i + 1)}, Created: int64(i)}
	}
	return c
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func writeTo(b *testing.B, w io.Writer, c *contents) {
	sw, err := NewWriter(w, c.header)
	must(b, err)
	writeEach(b, sw, SectionMetadata, c.objects)
	writeEach(b, sw, SectionSegments, []Segment{{ID: "7f3c9a1e-0b6d-4c2e-9d8f-1a2b3c4d5e6f", Pool: "ssd"}})
	writeEach(b, sw, SectionTasks, c.tasks)
	writeEach(b, sw, SectionState, []State{c.state})
	must(b, sw.Close())
}

// writeEach writes section name holding recs, each by pointer (as a
// master writes its records, without copying them).
func writeEach[R any](b *testing.B, sw *Writer, name string, recs []R) {
	must(b, sw.BeginSection(name))
	for i := range recs {
		must(b, sw.WriteRecord(&recs[i]))
	}
	must(b, sw.EndSection())
}

func BenchmarkWrite1MObjects(b *testing.B) {
	c := benchContents()
	var size countingWriter
	writeTo(b, &size, c)
	b.SetBytes(size.n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		writeTo(b, io.Discard, c)
	}
	b.ReportMetric(float64(size.n)/1e6, "MB")
}

func BenchmarkRead1MObjects(b *testing.B) {
	var buf bytes.Buffer
	writeTo(b, &buf, benchContents())
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var s countingSink
		if _, err := Read(bytes.NewReader(data), &s); err != nil {
			b.Fatal(err)
		}
		if s.Objects != benchObjects || s.Tasks != benchTasks {
			b.Fatalf("read %d objects, %d tasks", s.Objects, s.Tasks)
		}
	}
	b.ReportMetric(float64(len(data))/1e6, "MB")
}
